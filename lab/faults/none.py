"""none: the control -- nothing injected, so the runner and checker run the same path."""

from __future__ import annotations

from dataclasses import dataclass

from lab.faults.base import Fault, Targets, register


@register("none")
@dataclass
class NoFault(Fault):
    summary = "control: nothing injected"

    def apply(self, t: Targets) -> None:
        pass

    def remove(self, t: Targets) -> None:
        pass

    def confirm(self, t: Targets) -> str:
        return "control: nothing to confirm"
