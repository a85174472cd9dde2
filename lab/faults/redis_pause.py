"""redis_pause: freezes redis-server (SIGSTOP) until removed (SIGCONT): connections stay open,
nothing answers -- the backend must time out, not hang."""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass

from lab.faults.base import Fault, FaultNotConfirmed, Targets, register
from lab.stack import procs
from lab.wait import wait_until


@register("redis_pause")
@dataclass
class RedisPause(Fault):
    summary = "freeze redis-server (SIGSTOP) until removed"
    window = "send"

    def apply(self, t: Targets) -> None:
        self._pid = t.stack.service("redis").pid
        os.kill(self._pid, signal.SIGSTOP)

    def remove(self, t: Targets) -> None:
        pid = getattr(self, "_pid", None)
        if pid is not None:
            os.kill(pid, signal.SIGCONT)
            wait_until(lambda: procs.state(pid) not in ("T", "t"), what="redis resumed", timeout_s=10)
            self._pid = None

    def confirm(self, t: Targets) -> str:
        st = wait_until(lambda: procs.state(self._pid) in ("T", "t") and procs.state(self._pid),
                        what="redis stopped", timeout_s=10)
        if st not in ("T", "t"):
            raise FaultNotConfirmed(f"redis-server pid {self._pid} is in state {st!r}, not stopped")
        return f"redis-server pid {self._pid} in state {st} (stopped)"
