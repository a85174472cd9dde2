"""Lesson 3 exercise: where a request gets its redis.asyncio client.

``client(url, retry)`` returns ``(client, owned)``; the view closes the client at the end of the
request when ``owned`` is true. ``store.new_client(url, retry)`` makes a new one.
Check with: lab lesson 3 --check
"""

from __future__ import annotations

from dataclasses import replace

import redis.asyncio as aredis
from redis.asyncio.retry import Retry

from services.chat import store
from services.chat.defects import Behaviour

_client: aredis.Redis | None = None  # "connections are expensive: make one and share it"


def client(url: str, retry: Retry | None) -> tuple[aredis.Redis, bool]:
    global _client
    if _client is None:
        _client = store.new_client(url, retry)
    return _client, False


def apply(b: Behaviour) -> Behaviour:
    return replace(b, client=client)
