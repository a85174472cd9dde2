"""ttl_set_once: the conversation's TTL is set when the list is created and never renewed.

However active the conversation, it vanishes TTL after its first message. Only the TTL differs
from the correct append (rows are still appended atomically, once per message id), so the
switch changes one mechanism: a separate EXPIRE, sent only when the append created the list.
A request that fails between the two leaves a key with no TTL at all.
"""

from __future__ import annotations

from dataclasses import replace

import redis.asyncio as aredis

from services.chat import session, store
from services.chat.defects import Behaviour, register
from services.chat.store import Row


async def append_ttl_on_create(r: aredis.Redis, sid: str, rows: list[Row], ttl_ms: int) -> object:
    added, length = await store.append_idempotent(r, sid, rows, ttl_ms=0)
    if added and length == added:  # "the list was just created": the only time the TTL is set
        await r.pexpire(session.key(sid), ttl_ms)
        await r.pexpire(session.ids_key(sid), ttl_ms)
    return added


@register("ttl_set_once", "EXPIRE only when the list is created, never renewed")
def apply(b: Behaviour) -> Behaviour:
    return replace(b, append=append_ttl_on_create)
