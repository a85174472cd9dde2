"""Errors the lab reports to people: a message naming the bad value, and what to do next."""

from __future__ import annotations


class LabError(Exception):
    """A failure the user can act on; the CLI prints it without a traceback."""

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\nHint: {self.hint}" if self.hint else self.message


class UsageError(LabError):
    """Bad input (unknown mode, bad port, malformed file): exit 2, nothing started."""

    exit_code = 2


class NotReady(LabError):
    """A service did not become ready before its deadline."""


class Interrupted(LabError):
    """A signal arrived during start-up; what had started has been stopped. Never treated as
    a transient error by a wait (lab.common.wait re-raises it)."""

    def __init__(self, signum: int) -> None:
        import signal

        name = signal.Signals(signum).name
        super().__init__(f"{name} during start-up: stopped everything that had started")
        self.exit_code = 128 + signum
