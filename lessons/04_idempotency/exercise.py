"""Lesson 4 exercise: how a message is appended, and what the client does when a reply is lost.

Every row has an id (``row.row_id`` = "<message id>:<role>"); ``session.key(sid)`` is the list,
``session.ids_key(sid)`` a spare key for a set of ids. Keep the retries if you like: make a
retried append harmless. Check with: lab lesson 4 --check
"""

from __future__ import annotations

from dataclasses import replace

import redis.asyncio as aredis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff

from services.chat import session
from services.chat.defects import Behaviour
from services.chat.store import Row

# redis-py's default policy, shortened: retry 3 times on ConnectionError / TimeoutError.
RETRY = Retry(ExponentialBackoff(cap=0.2, base=0.01), 3)


async def append(r: aredis.Redis, sid: str, rows: list[Row], ttl_ms: int) -> object:
    async with r.pipeline(transaction=True) as pipe:
        pipe.rpush(session.key(sid), *[row.encode() for row in rows])
        pipe.pexpire(session.key(sid), ttl_ms)
        return await pipe.execute()


def apply(b: Behaviour) -> Behaviour:
    return replace(b, retry=RETRY, append=append)
