"""Readiness as a wait strategy: poll a condition until a deadline, never a fixed sleep."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from lab.errors import Interrupted, NotReady

T = TypeVar("T")


def wait_until(check: Callable[[], T | None], *, what: str, timeout_s: float = 15.0,
               interval_s: float = 0.05, transient: tuple[type[BaseException], ...] = (Exception,),
               hint: str | None = None, abort: Callable[[], str | None] | None = None) -> T:
    """Call ``check`` until it returns a truthy value; raise NotReady with the last error.

    ``transient`` exceptions count as "not yet"; ``abort`` may return a reason to stop early
    (e.g. the process being waited for has exited), which becomes the error.
    """
    deadline = time.monotonic() + timeout_s
    last: str = "no attempt finished"
    while True:
        try:
            result = check()
            if result:
                return result
            last = f"not ready (got {result!r})"
        except Interrupted:
            raise  # a signal is never "not ready yet"
        except transient as exc:
            last = f"{type(exc).__name__}: {exc}"
        if abort is not None:
            reason = abort()
            if reason:
                raise NotReady(f"{what}: {reason}; last check: {last}", hint)
        if time.monotonic() >= deadline:
            raise NotReady(f"{what}: not ready after {timeout_s:g} s; last check: {last}", hint)
        # Polling interval, not a guess at how long something takes: the deadline bounds the wait.
        time.sleep(interval_s)
