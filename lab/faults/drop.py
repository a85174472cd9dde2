"""drop: resets the connection (TCP RST) at the first data in one direction.

``downstream`` cuts Redis's reply after the command was applied (the outcome is unknown to the
client); ``upstream`` cuts the command before Redis sees it. ``one_shot`` arms the drop for one
send of a trial only (the schedule applies it just before that send and removes it right after);
otherwise it stays for the whole trial.
"""

from __future__ import annotations

from dataclasses import dataclass

from lab.faults.base import ToxicFault, register


@register("drop")
@dataclass
class Drop(ToxicFault):
    summary = "reset the connection at the first data (reset_peer), one send or the whole trial"
    toxic_type = "reset_peer"
    stream: str = "downstream"
    one_shot: bool = True
    timeout_ms: int = 0
    proxy: str = "redis"

    # A property where the other faults have a class constant: one_shot decides it per instance
    # (mypy cannot see a property read like the ClassVar it overrides).
    @property
    def window(self) -> str:  # type: ignore[override]
        return "send" if self.one_shot else "trial"

    def attributes(self) -> dict[str, int]:
        return {"timeout": self.timeout_ms}
