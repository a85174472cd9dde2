"""lab.signals.interrupt_on: SIGTERM unwinds like Ctrl-C, even when it lands in a finalizer
(seen in CI: a SIGTERM arrived during redis-py's ConnectionPool.__del__, Python printed and
dropped the KeyboardInterrupt, and `lab lesson --check` ran its 20 trials to the end)."""

from __future__ import annotations

import os
import signal

import pytest

from lab.signals import interrupt_on


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
