"""Lesson 3 solution: a client per request, made in the request's own event loop, closed by it.

A redis.asyncio connection belongs to the loop that opened it. Flask gives every async view a
new loop, so a client kept across requests is always used from the wrong loop. (A pool shared
across loops is only safe under a server with one long-lived loop: Quart, or an ASGI app.)
"""

from __future__ import annotations

from dataclasses import replace

import redis.asyncio as aredis
from redis.asyncio.retry import Retry

from services.chat import store
from services.chat.defects import Behaviour


def client(url: str, retry: Retry | None) -> tuple[aredis.Redis, bool]:
    return store.new_client(url, retry), True  # owned: the view closes it before returning


def apply(b: Behaviour) -> Behaviour:
    return replace(b, client=client)
