"""lab.common.signals.interrupt_on: SIGTERM unwinds like Ctrl-C, even when it lands in a finalizer
(seen in CI: a SIGTERM arrived during redis-py's ConnectionPool.__del__, Python printed and
dropped the KeyboardInterrupt, and `lab lesson --check` ran its 20 trials to the end)."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from lab.common.signals import Interrupt, deferred, exit_code, interrupt_on, run_async


class _SignalsInItsFinalizer:
    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(10_000):  # the handler runs in here: its exception is printed and dropped
            pass


def test_sigterm_raises_keyboard_interrupt_and_handlers_are_restored() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt, match="signal 15"):
        with interrupt_on((signal.SIGTERM,)):
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(10_000_000):  # bounded: the handler interrupts this loop
                pass
            pytest.fail("the signal did not interrupt the body")
    assert signal.getsignal(signal.SIGTERM) is before


# The dropped exception is exactly what this test provokes: pytest would report it as a warning.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_signal_dropped_in_a_finalizer_still_ends_the_body_as_interrupted() -> None:
    reached = False
    with pytest.raises(KeyboardInterrupt, match="could not be raised"):
        with interrupt_on((signal.SIGTERM,)):
            obj = _SignalsInItsFinalizer()
            del obj
            reached = True  # the body went on: the exception was dropped inside __del__
    assert reached


# ---------------------------------------------------------------- lab.common.signals, by real signals
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_each_signal_raises_an_interrupt_with_its_exit_code(sig: signal.Signals) -> None:
    with pytest.raises(Interrupt) as info:
        with interrupt_on():
            os.kill(os.getpid(), sig)
            for _ in range(10_000_000):
                pass
            pytest.fail("the signal did not interrupt the body")
    assert info.value.signum == sig and exit_code(info.value) == 128 + sig
    assert isinstance(info.value, KeyboardInterrupt)  # every Ctrl-C path handles it


def test_a_plain_keyboard_interrupt_is_130() -> None:
    assert exit_code(KeyboardInterrupt()) == 130


def test_a_body_that_handles_the_interrupt_still_ends_with_the_signal() -> None:
    """`lab chaos` catches the interrupt to write its partial report and returns: the run still
    ends with the signal's exit status."""
    reported = False
    with pytest.raises(Interrupt) as info:
        with interrupt_on():
            try:
                os.kill(os.getpid(), signal.SIGHUP)
                for _ in range(10_000_000):
                    pass
            except KeyboardInterrupt:
                reported = True
    assert reported and info.value.signum == signal.SIGHUP


def test_deferred_finishes_the_body_then_raises() -> None:
    done = False
    with pytest.raises(Interrupt) as info:
        with interrupt_on():
            with deferred():
                os.kill(os.getpid(), signal.SIGTERM)
                for _ in range(100_000):  # the handler runs in here and only notes it
                    pass
                done = True
    assert done and info.value.signum == signal.SIGTERM


def test_run_async_cancels_the_main_task_so_its_clean_up_runs() -> None:
    """A signal during asyncio code cancels the main task: its finally blocks (closing the
    browser, healing faults) run, even ones that await, then Interrupt(signum) is raised."""
    steps: list[str] = []

    async def main() -> None:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            await asyncio.sleep(30)  # cancelled at once: the deadline of this test, never reached
            steps.append("not cancelled")
        finally:
            await asyncio.sleep(0)
            steps.append("clean-up ran")

    with pytest.raises(Interrupt) as info:
        with interrupt_on():
            run_async(main())
    assert steps == ["clean-up ran"] and info.value.signum == signal.SIGTERM


def test_run_async_without_interrupt_on_is_asyncio_run() -> None:
    async def main() -> int:
        return 7

    assert run_async(main()) == 7
