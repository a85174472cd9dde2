"""bandwidth: limits the link to rate_kbps KB/s (0 holds all data)."""

from __future__ import annotations

from dataclasses import dataclass

from lab.faults.base import ToxicFault, register


@register("bandwidth")
@dataclass
class Bandwidth(ToxicFault):
    summary = "limit the link to rate_kbps KB/s (negative values crash toxiproxy: refused)"
    toxic_type = "bandwidth"
    rate_kbps: int = 1
    stream: str = "downstream"
    proxy: str = "redis"

    def attributes(self) -> dict[str, int]:
        return {"rate": self.rate_kbps}
