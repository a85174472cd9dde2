"""ttl_set_once: the conversation's TTL is set when the list is created and never renewed.

However active the conversation, it vanishes TTL after its first message.
"""

from __future__ import annotations

from dataclasses import replace

import redis.asyncio as aredis

from services.chat import session
from services.chat.defects import Behaviour, register
from services.chat.store import Row


async def append_ttl_on_create(r: aredis.Redis, sid: str, rows: list[Row], ttl_ms: int) -> object:
    length = await r.rpush(session.key(sid), *[row.encode() for row in rows])
    if length == len(rows):  # "the list was just created": the only time the TTL is set
        await r.pexpire(session.key(sid), ttl_ms)
    return length


@register("ttl_set_once", "EXPIRE only when the list is created, never renewed")
def apply(b: Behaviour) -> Behaviour:
    return replace(b, append=append_ttl_on_create)
