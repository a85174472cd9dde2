"""Lesson 2 exercise: how a message is appended to the conversation and its TTL set.

``append`` stores ``rows`` in the list chat:<sid> (``store.append_idempotent`` appends each row
once, by message id, in one Lua script; ``ttl_ms=0`` leaves the TTL alone). The conversation
should live ``ttl_ms`` after its LAST message. Check with: lab lesson 2 --check
"""

from __future__ import annotations

from dataclasses import replace

import redis.asyncio as aredis

from services.chat import session, store
from services.chat.defects import Behaviour
from services.chat.store import Row


async def append(r: aredis.Redis, sid: str, rows: list[Row], ttl_ms: int) -> object:
    added, length = await store.append_idempotent(r, sid, rows, ttl_ms=0)
    if added and length == added:  # the list was just created: give it its TTL
        await r.pexpire(session.key(sid), ttl_ms)
        await r.pexpire(session.ids_key(sid), ttl_ms)
    return added


def apply(b: Behaviour) -> Behaviour:
    return replace(b, append=append)
