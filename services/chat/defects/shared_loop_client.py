"""shared_loop_client: one module-global ``redis.asyncio`` client shared by all requests.

Its connections are bound to the event loop of the request that opened them. Under Flask every
async view has a new loop, so later requests fail with "attached to a different loop" or
"Event loop is closed" -- sometimes after their command already reached Redis.
"""

from __future__ import annotations

import threading
from dataclasses import replace

import redis.asyncio as aredis
from redis.asyncio.retry import Retry

from services.chat import store
from services.chat.defects import Behaviour, register

_clients: dict[tuple[str, int], aredis.Redis] = {}  # the incident's module-global client
_lock = threading.Lock()


def shared_client(url: str, retry: Retry | None) -> tuple[aredis.Redis, bool]:
    # One global per (url, retry policy), so profiles that differ in retries don't share one.
    with _lock:
        client = _clients.get((url, id(retry)))
        if client is None:
            client = _clients[(url, id(retry))] = store.new_client(url, retry)
    return client, False  # not owned: never closed, like a module global


@register("shared_loop_client", "one module-global redis.asyncio client across event loops")
def apply(b: Behaviour) -> Behaviour:
    return replace(b, client=shared_client)
