"""blackhole: swallows all data on the link; closes after timeout_ms without data (0 = never).

Removing it closes the connections it touched (Toxiproxy's timeout toxic)."""

from __future__ import annotations

from dataclasses import dataclass

from lab.faults.base import ToxicFault, register


@register("blackhole")
@dataclass
class Blackhole(ToxicFault):
    summary = "drop all data silently (timeout toxic); timeout_ms 0 = hold forever"
    window = "send"
    toxic_type = "timeout"
    timeout_ms: int = 0
    stream: str = "upstream"
    proxy: str = "redis"

    def attributes(self) -> dict[str, int]:
        return {"timeout": self.timeout_ms}
