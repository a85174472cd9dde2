"""latency: delays every chunk on the Redis link by latency_ms (+- jitter_ms)."""

from __future__ import annotations

import time
from dataclasses import dataclass

import redis

from lab.common.errors import UsageError
from lab.faults.base import FaultNotConfirmed, Targets, ToxicFault, register
from services.chat.config import MAX_INJECTED_LATENCY_MS


@register("latency")
@dataclass
class Latency(ToxicFault):
    summary = "delay each chunk on a proxy by latency_ms (jitter_ms around it)"
    toxic_type = "latency"
    latency_ms: int = 500
    jitter_ms: int = 0
    stream: str = "downstream"
    proxy: str = "redis"

    def attributes(self) -> dict[str, int]:
        return {"latency": self.latency_ms, "jitter": self.jitter_ms}

    def step_delay_ms(self) -> float:
        return float(self.latency_ms + self.jitter_ms)

    def check(self) -> None:
        super().check()
        # The backend's Redis timeouts are sized above this bound (services/chat/config.py):
        # more latency would turn every correct request into a timeout, not a test of memory.
        if self.latency_ms + self.jitter_ms > MAX_INJECTED_LATENCY_MS:
            raise UsageError(
                f"latency_ms + jitter_ms = {self.latency_ms + self.jitter_ms} is over "
                f"{MAX_INJECTED_LATENCY_MS} ms, the most the backend's timeouts allow for"
            )

    def confirm(self, t: Targets) -> str:
        listed = super().confirm(t)
        if self.proxy != "redis":
            return listed
        # Observe it: one PING through the proxy must take at least the injected latency (its
        # round trip meets it on the way in or on the way back). No handshake (RESP2, no CLIENT
        # SETINFO): redis-py's default HELLO is a round trip of its own under the fault (0.3 s of
        # each 300 ms arm). The PING is timed with its connect, which can only add to it: the
        # bound it proves stays a lower one.
        lower_ms = self.latency_ms - self.jitter_ms
        r = redis.Redis.from_url(
            t.stack.cfg.redis_proxy_url, socket_timeout=10, retry=None, protocol=2, driver_info=None
        )
        try:
            t0 = time.monotonic()
            r.ping()
            took_ms = (time.monotonic() - t0) * 1000
        finally:
            r.close()
        if took_ms < lower_ms:
            raise FaultNotConfirmed(f"{self.describe()}: a PING took {took_ms:.0f} ms, under {lower_ms} ms")
        return f"{listed}; PING through the proxy took {took_ms:.0f} ms"
