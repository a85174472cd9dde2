"""blind_retry: a non-idempotent append, retried by the client on connection errors.

If the reply to a RPUSH is lost after Redis applied it (a connection reset on the way back),
the client cannot tell and sends it again: the message is stored twice. redis-py's default
(Retry with backoff on ConnectionError/TimeoutError) does exactly this.
"""

from __future__ import annotations

from dataclasses import replace

import redis.asyncio as aredis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff

from services.chat import session
from services.chat.defects import Behaviour, append_correct, register
from services.chat.store import Row

# The policy of redis-py's defaults, shortened: 3 retries, jittered backoff.
BLIND_RETRY = Retry(ExponentialBackoff(cap=0.2, base=0.01), 3)


async def append_plain(r: aredis.Redis, sid: str, rows: list[Row], ttl_ms: int) -> object:
    # MULTI/EXEC: applied whole or not at all, but not idempotent: a retry after a lost EXEC
    # reply appends the rows again.
    async with r.pipeline(transaction=True) as pipe:
        pipe.rpush(session.key(sid), *[row.encode() for row in rows])
        pipe.pexpire(session.key(sid), ttl_ms)
        return await pipe.execute()


@register("blind_retry", "non-idempotent append retried on connection errors")
def apply(b: Behaviour) -> Behaviour:
    # Only replace the append if it is still the idempotent one: with ttl_set_once also on, its
    # (equally non-idempotent) append stays and is retried just as blindly.
    append = append_plain if b.append is append_correct else b.append
    return replace(b, retry=BLIND_RETRY, append=append)
