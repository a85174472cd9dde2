"""backend_restart: stops the chat backend (SIGTERM, in-flight requests finish) and starts it
again. Profiles travel with each request, so nothing about the trial lives in the process."""

from __future__ import annotations

from dataclasses import dataclass

from lab.faults.base import Fault, FaultNotConfirmed, Targets, register


@register("backend_restart")
@dataclass
class BackendRestart(Fault):
    summary = "restart the chat backend process"
    window = "send"  # applied just before one send

    def apply(self, t: Targets) -> None:
        self._old_pid = t.stack.service("backend").pid
        t.stack.restart_backend()

    def remove(self, t: Targets) -> None:
        pass

    def confirm(self, t: Targets) -> str:
        new = t.stack.service("backend").pid
        if new == getattr(self, "_old_pid", None):
            raise FaultNotConfirmed("the backend kept its pid: it was not restarted")
        return f"backend restarted: pid {self._old_pid} -> {new}"
