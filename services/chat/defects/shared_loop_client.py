"""shared_loop_client: one module-global ``redis.asyncio`` client shared by all requests.

Its connections are bound to the event loop of the request that opened them. Under Flask every
async view has a new loop, so later requests fail with "attached to a different loop" or
"Event loop is closed" -- sometimes after their command already reached Redis. A request whose
loop closes while it holds the client's connection lock wedges the client for good (every later
request fails), as in production until a restart.

In lab mode the "global" is one per trial (the X-Lab-Trial header): shared by all of the
trial's requests across their loops -- the defect -- but a wedge in one trial does not turn
every later trial of the run into one that can acknowledge nothing (measured: after a wedge,
23 of 30 incident trials got only 503s). Without the header it is one per process.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import replace

from flask import current_app, has_request_context, request

import redis.asyncio as aredis
from redis.asyncio.retry import Retry

from services.chat import store
from services.chat.profile import H_TRIAL
from services.chat.defects import Behaviour, register

_clients: OrderedDict[tuple[str, int, str], aredis.Redis] = OrderedDict()  # the module-global client(s)
_lock = threading.Lock()
KEEP_TRIALS = 32  # clients of older trials are dropped (their sockets go with them)


def shared_client(url: str, retry: Retry | None) -> tuple[aredis.Redis, bool]:
    # One global per (url, retry policy), so profiles that differ in retries don't share one;
    # and per lab trial (see the module's docstring).
    trial = (request.headers.get(H_TRIAL, "")
             if has_request_context() and current_app.config.get("LAB_MODE") else "")
    with _lock:
        key = (url, id(retry), trial)
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = store.new_client(url, retry)
            while len(_clients) > KEEP_TRIALS:
                _clients.popitem(last=False)
        _clients.move_to_end(key)
    return client, False  # not owned: never closed, like a module global


@register("shared_loop_client", "one module-global redis.asyncio client across event loops")
def apply(b: Behaviour) -> Behaviour:
    return replace(b, client=shared_client)
