"""shared_loop_client: one module-global ``redis.asyncio`` client shared by all requests.

Its connections are bound to the event loop of the request that opened them. Under Flask every
async view has a new loop, so later requests fail with "attached to a different loop" or
"Event loop is closed" -- sometimes after their command already reached Redis.

It can also wedge: the pool's asyncio lock binds to the loop of the first request that had to
wait on it, and once that loop has closed every request that has to wait fails -- with 4 trials
at once, often every request (measured in a bench run: 23 of 30 later incident trials got only
503s; in a grid run, 4 of 4 incident trials acknowledged nothing). In production that lasts until the worker is
restarted; here the wedged client is replaced at the next request, as a supervisor restarting
the worker would, so one wedge does not make every later trial of a run one that can
acknowledge nothing. The defect itself -- one client across loops -- is untouched.
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


def wedged(client: aredis.Redis) -> bool:
    """The pool's lock is bound to a closed loop: from then on every request that has to wait on
    it fails ("bound to a different event loop"), whether or not a waiter of the dead loop is
    still queued in it."""
    lock = getattr(client.connection_pool, "_lock", None)
    loop = getattr(lock, "_loop", None)
    return loop is not None and loop.is_closed()


def shared_client(url: str, retry: Retry | None) -> tuple[aredis.Redis, bool]:
    # One global per (url, retry policy), so profiles that differ in retries don't share one.
    with _lock:
        client = _clients.get((url, id(retry)))
        if client is None or wedged(client):
            client = _clients[(url, id(retry))] = store.new_client(url, retry)
    return client, False  # not owned: never closed, like a module global


@register("shared_loop_client", "one module-global redis.asyncio client across event loops")
def apply(b: Behaviour) -> Behaviour:
    return replace(b, client=shared_client)
