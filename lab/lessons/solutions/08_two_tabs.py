"""Lesson 8 solution: optimistic locking -- WATCH the document, write it in MULTI/EXEC, and read
again when EXEC reports that another request changed it in between.

The document layout stays; what changes is that a write based on a stale read never lands: EXEC
fails (WatchError) if the key changed after WATCH, and the append starts over from a fresh read.
"""

from __future__ import annotations

from dataclasses import replace

import redis.asyncio as aredis
from redis.exceptions import WatchError

from services.chat import session, store
from services.chat.defects import Behaviour
from services.chat.store import Row

ATTEMPTS = 20  # each retry means another request's write landed: contention is bounded by users


async def append(r: aredis.Redis, sid: str, rows: list[Row], ttl_ms: int) -> object:
    key = session.key(sid)
    async with r.pipeline(transaction=True) as pipe:
        for _ in range(ATTEMPTS):
            try:
                await pipe.watch(key)
                doc = store.decode_document(await pipe.get(key))
                have = {row.row_id for row in doc}
                doc += [row for row in rows if row.row_id not in have]
                pipe.multi()
                pipe.set(key, store.encode_document(doc), px=ttl_ms)
                await pipe.execute()
                return len(doc)
            except WatchError:
                continue  # another request wrote in between: read it again
    raise RuntimeError(f"{key}: still contended after {ATTEMPTS} attempts")


async def read(r: aredis.Redis, sid: str) -> list[Row]:
    return store.decode_document(await r.get(session.key(sid)))


def apply(b: Behaviour) -> Behaviour:
    return replace(b, append=append, read=read)
