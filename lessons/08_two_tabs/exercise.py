"""Lesson 8 exercise: the conversation as one JSON document, appended to by read-modify-write.

``store.decode_document`` / ``store.encode_document`` turn the stored JSON array into rows and
back; ``session.key(sid)`` is the key. Keep the document layout (other code reads it with
``read``): make two appends at once keep both. Check with: lab lesson 8 --check
"""

from __future__ import annotations

from dataclasses import replace

import redis.asyncio as aredis

from services.chat import session, store
from services.chat.defects import Behaviour
from services.chat.store import Row


async def append(r: aredis.Redis, sid: str, rows: list[Row], ttl_ms: int) -> object:
    doc = store.decode_document(await r.get(session.key(sid)))
    have = {row.row_id for row in doc}
    doc += [row for row in rows if row.row_id not in have]
    await r.set(session.key(sid), store.encode_document(doc), px=ttl_ms)
    return len(doc)


async def read(r: aredis.Redis, sid: str) -> list[Row]:
    return store.decode_document(await r.get(session.key(sid)))


def apply(b: Behaviour) -> Behaviour:
    return replace(b, append=append, read=read)
