"""redis_pause: freezes Redis until removed -- SIGSTOP natively, `docker pause` (cgroup freezer)
on compose. Connections stay open and nothing answers: the backend must time out, not hang."""

from __future__ import annotations

from dataclasses import dataclass

from lab.faults.base import Fault, FaultNotConfirmed, Targets, register
from lab.common.wait import wait_until


@register("redis_pause")
@dataclass
class RedisPause(Fault):
    modes = ("native", "compose")  # the external mode owns no process to pause or restart
    summary = "freeze Redis (SIGSTOP / docker pause) until removed"
    window = "send"

    def apply(self, t: Targets) -> None:
        self._paused = True  # set first: a half-applied pause is still undone by remove
        t.stack.pause_redis()

    def remove(self, t: Targets) -> None:
        if getattr(self, "_paused", False):
            t.stack.resume_redis()
            self._paused = False

    def confirm(self, t: Targets) -> str:
        # The kernel (process state T) or the engine (State.Paused) says so, not the signal sent.
        try:
            return wait_until(t.stack.redis_paused, what="redis paused", timeout_s=10)
        except Exception as exc:
            raise FaultNotConfirmed(f"redis was not seen paused: {exc}") from None
