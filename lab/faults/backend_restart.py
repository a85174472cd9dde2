"""backend_restart: stops the chat backend (SIGTERM, in-flight requests finish) and starts it
again -- the process natively, the container on compose. Profiles travel with each request, so
nothing about the trial lives in the process."""

from __future__ import annotations

from dataclasses import dataclass

from lab.faults.base import Fault, FaultNotConfirmed, Targets, register


@register("backend_restart")
@dataclass
class BackendRestart(Fault):
    modes = ("native", "compose")  # the external mode owns no process to pause or restart
    summary = "restart the chat backend (process / container)"
    window = "send"  # applied just before one send

    def apply(self, t: Targets) -> None:
        self._before = t.stack.instance("backend")
        t.stack.restart_backend()

    def remove(self, t: Targets) -> None:
        pass

    def confirm(self, t: Targets) -> str:
        now = t.stack.instance("backend")
        if now == getattr(self, "_before", None):
            raise FaultNotConfirmed(f"the backend is still {now}: it was not restarted")
        return f"backend restarted: {self._before} -> {now}"
