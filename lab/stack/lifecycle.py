"""A stack as a context manager: use one that runs, or start one; stop only what was started.

Every command and fixture that needs a stack writes ``with stack:`` (``keep = True`` leaves what
it started running). ``up()`` itself undoes a half-start (what had started is stopped when a
start fails or is interrupted); this adds the rule on the way out -- a stack that was already up
and healthy is reused and left running -- and defers the instant between ``up()`` returning and
knowing whether it started the stack (a signal there would leave a stack running that nothing
records as ours).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from lab.common.signals import deferred


class _UpDown(Protocol):
    keep: bool
    _started: bool

    def up(self) -> dict[str, Any]: ...
    def down(self) -> list[str]: ...


S = TypeVar("S", bound=_UpDown)


class Lifecycle:
    """Mixed into the stacks: their own ``up()`` / ``down()``, and ``with`` from here."""

    keep: bool = False  # leave a stack this started running (pytest --lab-keep-stack)
    _started: bool = False

    def __enter__(self: S) -> S:
        try:
            with deferred():
                self._started = not self.up().get("reused")
        except BaseException:
            # A signal noted while up() returned is raised here, with the stack up: no __exit__
            # will run for it, so stop what this call started now.
            if self._started and not self.keep:
                with deferred():
                    self.down()
            self._started = False
            raise
        return self

    def _start_or_undo(self, start: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """``start()`` with SIGINT/SIGTERM raised as Interrupted, and anything escaping it
        (a failure, a signal) stopping what it had started: the compose stacks' ``up()``."""
        from lab.common.errors import Interrupted
        from lab.common.signals import interrupt_on

        with interrupt_on(exc=Interrupted):
            try:
                return start()
            except BaseException:
                with deferred():
                    self.down()  # type: ignore[attr-defined]
                raise

    def __exit__(self: S, *exc: object) -> None:
        started, self._started = self._started, False
        if started and not self.keep:
            self.down()
