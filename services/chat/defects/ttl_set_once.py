"""ttl_set_once: the conversation's TTL is set when the list is created and never renewed.

However active the conversation, it vanishes TTL after its first message. Only the TTL differs
from the correct append: rows are still stored once per message id, so this switch changes one
mechanism (the article's separate RPUSH then EXPIRE, not atomic, EXPIRE only on creation).
"""

from __future__ import annotations

from dataclasses import replace

import redis.asyncio as aredis

from services.chat import session
from services.chat.defects import Behaviour, register
from services.chat.store import Row


async def append_ttl_on_create(r: aredis.Redis, sid: str, rows: list[Row], ttl_ms: int) -> object:
    added = 0
    for row in rows:
        if not await r.sadd(session.ids_key(sid), row.row_id):
            continue  # already stored: appends stay idempotent by message id
        length = await r.rpush(session.key(sid), row.encode())
        added += 1
        if length == 1:  # "the list was just created": the only time the TTL is set
            await r.pexpire(session.key(sid), ttl_ms)
            await r.pexpire(session.ids_key(sid), ttl_ms)
    return added


@register("ttl_set_once", "EXPIRE only when the list is created, never renewed")
def apply(b: Behaviour) -> Behaviour:
    return replace(b, append=append_ttl_on_create)
