"""Readiness as a wait strategy: poll a condition until a deadline, never a fixed sleep.

One bookkeeping for sync and async code (``wait_until`` / ``wait_until_async``): the check, what
counts as "not yet" (transient errors), an early abort, the deadline and the error naming the
last attempt. The async one can be woken by an event (``wake``) instead of polling.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from lab.common.errors import Interrupted, NotReady

T = TypeVar("T")


class _Attempts(Generic[T]):
    def __init__(
        self,
        check: Callable[[], T | None],
        what: str,
        timeout_s: float,
        transient: tuple[type[BaseException], ...],
        hint: str | None,
        abort: Callable[[], str | None] | None,
    ) -> None:
        self.check, self.what, self.timeout_s = check, what, timeout_s
        self.transient, self.hint, self.abort = transient, hint, abort
        self.deadline = time.monotonic() + timeout_s
        self.last = "no attempt finished"

    def once(self) -> T | None:
        """The check's truthy value, or None for "not yet"; NotReady past the deadline."""
        try:
            result = self.check()
            if result:
                return result
            self.last = f"not ready (got {result!r})"
        except Interrupted:
            raise  # a signal is never "not ready yet"
        except self.transient as exc:
            self.last = f"{type(exc).__name__}: {exc}"
        if self.abort is not None:
            reason = self.abort()
            if reason:
                raise NotReady(f"{self.what}: {reason}; last check: {self.last}", self.hint)
        if self.left_s() <= 0:
            raise NotReady(f"{self.what}: not ready after {self.timeout_s:g} s; last check: {self.last}", self.hint)
        return None

    def left_s(self) -> float:
        return self.deadline - time.monotonic()


def wait_until(
    check: Callable[[], T | None],
    *,
    what: str,
    timeout_s: float = 15.0,
    interval_s: float = 0.05,
    transient: tuple[type[BaseException], ...] = (Exception,),
    hint: str | None = None,
    abort: Callable[[], str | None] | None = None,
) -> T:
    """Call ``check`` until it returns a truthy value; raise NotReady with the last error.

    ``transient`` exceptions count as "not yet"; ``abort`` may return a reason to stop early
    (e.g. the process being waited for has exited), which becomes the error.
    """
    attempts = _Attempts(check, what, timeout_s, transient, hint, abort)
    while (result := attempts.once()) is None:
        # Polling interval, not a guess at how long something takes: the deadline bounds the wait.
        time.sleep(min(interval_s, max(0.0, attempts.left_s())))
    return result


async def wait_until_async(
    check: Callable[[], T | None],
    *,
    what: str,
    timeout_s: float = 15.0,
    interval_s: float = 0.05,
    transient: tuple[type[BaseException], ...] = (Exception,),
    hint: str | None = None,
    abort: Callable[[], str | None] | None = None,
    wake: Callable[[float], Awaitable[None]] | None = None,
) -> T:
    """``wait_until`` for a coroutine: the loop runs on while it waits. ``wake(max_s)``, if
    given, returns when the condition may have changed (or after max_s): no polling."""
    attempts = _Attempts(check, what, timeout_s, transient, hint, abort)
    while (result := attempts.once()) is None:
        left = max(0.0, attempts.left_s())
        await (wake(left) if wake is not None else asyncio.sleep(min(interval_s, left)))
    return result


async def dropped(task: "asyncio.Future[Any]") -> None:
    """``task`` cancelled if it still runs, and waited for: its end (an exception, a cancel)
    taken here -- never a "Task exception was never retrieved" once its loop closes."""
    if not task.done():
        task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def in_own_thread(fn: Callable[[], T], name: str = "lab-worker") -> T:
    """``fn()`` run in a thread of its own, waited for, its result or exception passed on: under
    pytest-playwright the sync API may own the calling thread's event loop, so async work (the
    runner, asyncio.run) needs a thread without one."""
    box: dict[str, object] = {}

    def work() -> None:
        try:
            box["out"] = fn()
        except BaseException as exc:
            box["err"] = exc

    t = threading.Thread(target=work, name=name)
    t.start()
    t.join()
    if "err" in box:
        raise box["err"]  # type: ignore[misc]  # a BaseException stored by work()
    return box["out"]  # type: ignore[return-value]  # fn's own result, stored by work()


async def bounded(aw: Awaitable[T], timeout_s: float) -> T | None:
    """``aw`` under a deadline, None if it failed or outlasted it: a best-effort step (a
    screenshot, a context's close) that must not hang or fail the run."""
    try:
        return await asyncio.wait_for(aw, timeout_s)
    except Exception:  # TimeoutError included
        return None


def quiet_poll_s(interval_s: float, since: float, window_s: float, now: float) -> float:
    """How long to sleep before the next read of something that must stay unchanged for
    ``window_s`` since ``since``: a polling interval, the last one clipped to end with the window
    (a read then, not up to a poll later); never 0, which would spin."""
    return min(interval_s, max(0.001, since + window_s - now))
