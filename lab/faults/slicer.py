"""slicer: cuts the data into small packets (average_size bytes +- size_variation), delay_us
apart -- exercises parsers that assume one read = one reply."""

from __future__ import annotations

from dataclasses import dataclass

from lab.faults.base import ToxicFault, register


@register("slicer")
@dataclass
class Slicer(ToxicFault):
    summary = "slice data into average_size-byte packets, delay_us apart"
    toxic_type = "slicer"
    average_size: int = 1
    size_variation: int = 0
    delay_us: int = 1000
    stream: str = "downstream"
    proxy: str = "redis"

    def attributes(self) -> dict[str, int]:
        return {"average_size": self.average_size, "size_variation": self.size_variation, "delay": self.delay_us}
