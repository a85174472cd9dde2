"""slow_close: delays the close of each connection by delay_ms."""

from __future__ import annotations

from dataclasses import dataclass

from lab.faults.base import ToxicFault, register


@register("slow_close")
@dataclass
class SlowClose(ToxicFault):
    summary = "delay each connection's close by delay_ms"
    toxic_type = "slow_close"
    delay_ms: int = 1000
    stream: str = "downstream"
    proxy: str = "redis"

    def attributes(self) -> dict[str, int]:
        return {"delay": self.delay_ms}
