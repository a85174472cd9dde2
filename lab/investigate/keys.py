"""The target's conversation key, read directly from the lab's Redis: PTTL, type and raw values.

The storage format is the app's business: the lab only counts values and searches them for
text. A read right after a send counts as evidence of a TTL rule only once the key has settled
(its contents unchanged and its TTL only decaying over a short window after the read): a write
still in flight makes the read unsettled, and an unsettled read is never such evidence.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, TypeVar

import redis

from lab.history import TtlObs

TTL_SETTLE_S = 0.05  # a TTL read counts once the key stayed as read this long after it
TTL_SETTLE_DEADLINE_S = 1.0
T = TypeVar("T")


class KeyReader:
    def __init__(self, redis_url: str) -> None:
        self.redis_url = redis_url
        self._r: redis.Redis | None = None

    def _redis(self) -> redis.Redis:
        if self._r is None:
            self._r = redis.Redis.from_url(self.redis_url, socket_timeout=5, retry=None)
        return self._r

    def _call(self, fn: Callable[[redis.Redis], T]) -> T:
        try:
            return fn(self._redis())
        except redis.RedisError:
            self.close()  # a restarted Redis (redis_restart) breaks the old connection: one new try
            return fn(self._redis())

    def close(self) -> None:
        if self._r is not None:
            self._r.close()
            self._r = None

    def read(self, key: str) -> tuple[int, str, list[bytes]]:
        """(PTTL, type, raw values) of ``key``."""

        def read(r: redis.Redis) -> tuple[int, str, list[bytes]]:
            pttl = int(r.pttl(key))
            kind = r.type(key)
            kind = kind.decode() if isinstance(kind, bytes) else str(kind)
            got: list[Any] = []
            if kind == "list":
                got = list(r.lrange(key, 0, -1))
            elif kind == "string":
                got = [r.get(key) or b""]
            elif kind == "hash":
                got = list(r.hvals(key))
            elif kind == "zset":
                got = list(r.zrange(key, 0, -1))
            elif kind == "set":
                got = sorted(r.smembers(key))
            elif kind == "stream":
                got = [repr(e) for e in r.xrange(key) or []]
            # The client answers bytes (no decode_responses): text is encoded alike for the search.
            return pttl, kind, [v if isinstance(v, bytes) else str(v).encode() for v in got]

        return self._call(read)

    def snapshot(self, key: str) -> tuple[float, float, int, int, int]:
        """(midpoint time, round trip ms, PTTL, value count, content digest) of the key."""
        t0 = time.time()
        pttl, _kind, values = self.read(key)
        t1 = time.time()
        return (t0 + t1) / 2, (t1 - t0) * 1000, pttl, len(values), hash(tuple(values))

    async def settled_ttl(self, key: str, turn: int) -> TtlObs:
        """The key's PTTL once it has settled (``settled=False`` if it did not by the deadline)."""
        deadline = time.monotonic() + TTL_SETTLE_DEADLINE_S
        prev = self.snapshot(key)
        while True:
            # The settle window: how long the key must stay as read (bounded by the deadline).
            await asyncio.sleep(TTL_SETTLE_S)
            cur = self.snapshot(key)
            tol_ms = 5 + (prev[1] + cur[1]) / 2
            same = cur[3:] == prev[3:] and (
                cur[2] == prev[2] == -1
                or cur[2] == prev[2] == -2
                or (cur[2] >= 0 and prev[2] >= 0 and cur[2] <= prev[2] + tol_ms)
            )
            if same or time.monotonic() > deadline:
                return TtlObs(turn, prev[0], prev[2], prev[3], round(prev[1], 2), settled=same)
            prev = cur
