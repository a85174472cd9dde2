"""Lesson 2 solution: renew the TTL on every write, in the same script as the append.

``append_idempotent`` with ``ttl_ms`` renews both keys' TTL inside its Lua script: append and
renewal happen together or not at all (a request cut between a separate RPUSH and PEXPIRE
would leave a key with no TTL, or an old one).
"""

from __future__ import annotations

from dataclasses import replace

import redis.asyncio as aredis

from services.chat import store
from services.chat.defects import Behaviour
from services.chat.store import Row


async def append(r: aredis.Redis, sid: str, rows: list[Row], ttl_ms: int) -> object:
    added, _length = await store.append_idempotent(r, sid, rows, ttl_ms=ttl_ms)
    return added


def apply(b: Behaviour) -> Behaviour:
    return replace(b, append=append)
