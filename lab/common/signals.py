"""One way for every long-running command to stop on a signal: SIGINT, SIGTERM and SIGHUP all
unwind like Ctrl-C, so trials stop, the partial report is written and whatever the command
started is stopped; the exit status says which signal it was (128 + its number: 130, 143, 129).

Without this, SIGTERM and SIGHUP keep their default action -- the process dies on the spot and
leaves Redis, Toxiproxy and the backend running (they are detached, in sessions of their own).

    with interrupt_on():          # the CLI wraps each long-running command in this, once
        ...                       # a signal raises Interrupt (a KeyboardInterrupt) in here
    with deferred():              # a stretch that must finish (stopping the stack, writing a
        ...                       # report): signals are noted, and raised when it ends
    run_async(coro)               # asyncio.run whose main task a signal cancels (see there)

Contexts nest (innermost wins for each signal) and restore the previous handlers when they end.
Outside the main thread they do nothing: signals are the main thread's business.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, TypeVar

T = TypeVar("T")
HANDLED: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupt(KeyboardInterrupt):
    """A signal asked the run to stop. A KeyboardInterrupt, so every `except KeyboardInterrupt`
    that writes a partial report (lab chaos, lab investigate) treats SIGTERM/SIGHUP as Ctrl-C."""

    def __init__(self, signum: int, note: str = "") -> None:
        self.signum = signum
        super().__init__(f"signal {signum} ({signal.Signals(signum).name})" + (f" {note}" if note else ""))

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def exit_code(exc: BaseException) -> int:
    """The exit status for an interrupt: 128 + the signal's number; 130 for a plain
    KeyboardInterrupt (Python's own SIGINT handler)."""
    signum = getattr(exc, "signum", None)
    return 128 + signum if isinstance(signum, int) else 130


def name(signum: int) -> str:
    return signal.Signals(signum).name


@dataclass
class _Frame:
    sigs: tuple[signal.Signals, ...]
    on_signal: Callable[[int], None]  # what the innermost frame does with a signal
    interrupts: bool = True  # False: deferred (signals only noted)
    got: list[int] = field(default_factory=list)


_frames: list[_Frame] = []


def _handler(signum: int, _frame: FrameType | None) -> None:
    covering = [f for f in _frames if signum in f.sigs]
    for f in covering:  # every enclosing context learns of it: each ends as interrupted
        f.got.append(signum)
    if covering:
        covering[-1].on_signal(signum)


@contextmanager
def _installed(frame: _Frame) -> Iterator[_Frame]:
    if threading.current_thread() is not threading.main_thread():
        yield frame
        return
    old = {s: signal.signal(s, _handler) for s in frame.sigs}
    _frames.append(frame)
    try:
        yield frame
    finally:
        _frames.remove(frame)
        for s, h in old.items():
            signal.signal(s, h)


def received() -> int | None:
    """The first signal any active context has seen, or None."""
    for f in _frames:
        if f.got:
            return f.got[0]
    return None


@contextmanager
def interrupt_on(
    sigs: tuple[signal.Signals, ...] = HANDLED, exc: Callable[[int], BaseException] = Interrupt
) -> Iterator[None]:
    """``sigs`` raise ``exc(signum)`` (default Interrupt) where the program is, so it unwinds as
    on Ctrl-C and stops what it started (their default action would end the process with its
    children running).

    A signal that lands inside a finalizer (e.g. a connection pool's __del__) has its exception
    printed and dropped by Python; and a body may catch the interrupt itself to write a partial
    report. Either way the body ends without the exception: it is raised again then, so the run
    still ends as interrupted, with the signal's exit status."""

    def raise_it(signum: int) -> None:
        raise exc(signum)

    with _installed(_Frame(sigs, raise_it)) as frame:
        yield
    if frame.got:
        signum = frame.got[0]
        raise (
            exc(signum)
            if exc is not Interrupt
            else Interrupt(signum, "(the run stopped; or it arrived where it could not be raised)")
        )


@contextmanager
def deferred(sigs: tuple[signal.Signals, ...] = HANDLED) -> Iterator[None]:
    """Signals are noted, not acted on, until the body ends; then the first one is raised as an
    Interrupt (unless the body is already raising). For what a second Ctrl-C must not cut short:
    stopping the stack, writing a report."""
    with _installed(_Frame(sigs, lambda signum: None, interrupts=False)) as frame:
        yield
    if frame.got:
        raise Interrupt(frame.got[0], "(it arrived while the lab finished stopping or reporting)")


def run_async(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)``, with the signals an enclosing ``interrupt_on`` handles cancelling
    the main task instead of raising wherever the event loop happens to be.

    Why: asyncio.run installs its own SIGINT handler only while Python's default one is in
    place (ours replaces it), and an exception raised from a handler in the middle of the
    loop's machinery can skip the coroutines' clean-up (closing the browser, healing faults).
    Cancelling the main task unwinds every ``finally`` in order, as asyncio does for Ctrl-C;
    the run then raises Interrupt(signum). A second signal while it unwinds is noted only."""
    sigs = tuple(dict.fromkeys(s for f in _frames if f.interrupts for s in f.sigs))
    if not sigs or threading.current_thread() is not threading.main_thread():
        return asyncio.run(main)
    early = received()
    if early is not None:  # e.g. dropped in a finalizer before we got here: do not start
        main.close()
        raise Interrupt(early)
    with asyncio.Runner() as runner:
        loop = runner.get_loop()
        task = loop.create_task(main)
        first: list[int] = []

        def unretrieved(lp: asyncio.AbstractEventLoop, ctx: dict[str, Any]) -> None:
            # Ctrl-C reaches the whole process group: Playwright's driver exits on it, and its
            # transport's error future (nobody awaits it once the run unwinds) would be printed
            # as "Future exception was never retrieved". Anything else is reported as usual.
            if first and "Connection closed while reading from the driver" in str(ctx.get("exception")):
                return
            lp.default_exception_handler(ctx)

        loop.set_exception_handler(unretrieved)

        def cancel(signum: int) -> None:
            if first:
                print(
                    f"lab: {name(signum)} again: still stopping (trials, browser, faults); "
                    f"SIGKILL then `lab down` if it hangs",
                    file=sys.stderr,
                    flush=True,
                )
                return
            first.append(signum)
            if not task.done():
                task.cancel(f"signal {signum}")
                loop.call_soon_threadsafe(lambda: None)  # wake the selector at once

        with _installed(_Frame(sigs, cancel)):
            try:
                result = loop.run_until_complete(task)
            except asyncio.CancelledError:
                if first:
                    raise Interrupt(first[0]) from None
                raise
        if first:  # the coroutine finished (or swallowed the cancellation): still interrupted
            raise Interrupt(first[0])
        return result
