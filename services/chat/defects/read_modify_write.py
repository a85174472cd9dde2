"""read_modify_write: the conversation kept as one JSON document, read, appended to in Python and
written back -- with nothing between the GET and the SET to stop another request's write.

Two tabs (or two quick sends) of one conversation: both GET the same document, each appends its
own turn, and the second SET overwrites the first. Each acknowledged request did write its turn;
only one survives (a lost update). Rows stay once per id and the TTL is renewed on every write,
as in the correct append: the only change is the missing atomicity (WATCH/MULTI, a script, or a
list with RPUSH would each close the window).
"""

from __future__ import annotations

from dataclasses import replace

import redis.asyncio as aredis

from services.chat import session, store
from services.chat.defects import Behaviour, register
from services.chat.store import Row


async def append_read_modify_write(r: aredis.Redis, sid: str, rows: list[Row], ttl_ms: int) -> object:
    doc = store.decode_document(await r.get(session.key(sid)))  # read ...
    have = {row.row_id for row in doc}
    doc += [row for row in rows if row.row_id not in have]  # ... modify ...
    # ... write: the incident's line. Another request's SET since our GET is overwritten.
    await r.set(session.key(sid), store.encode_document(doc), px=ttl_ms)
    return len(doc)


async def read_document(r: aredis.Redis, sid: str) -> list[Row]:
    return store.decode_document(await r.get(session.key(sid)))


@register("read_modify_write", "history as one JSON document: GET, append, SET (no WATCH)")
def apply(b: Behaviour) -> Behaviour:
    return replace(b, append=append_read_modify_write, read=read_document)
