"""The incident's defects, each an independent named switch over one step of a request.

A ``Behaviour`` says how a request does each step; its defaults are the correct profile.
Each defect module replaces one step with the incident's code and registers itself by name.
A profile (a set of defect names) is the correct Behaviour with those defects applied in
registry order. Nothing here decides to drop data: each defect is the mechanism itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aredis
from redis.asyncio.retry import Retry

from flask import Response

from services.chat import session, store
from services.chat.errors import ApiError
from services.chat.store import Row

RunWrite = Callable[[Coroutine[Any, Any, Any]], Awaitable[None]]
ClientSource = Callable[[str, "Retry | None"], "tuple[aredis.Redis, bool]"]
Append = Callable[[aredis.Redis, str, list[Row], int], Awaitable[object]]
Read = Callable[[aredis.Redis, str], Awaitable[list[Row]]]
OnStoreError = Callable[[BaseException, str], None]
# A streamed turn stored by the stream itself: (the token lines, the save) -> the lines sent.
StreamSave = Callable[[Iterator[bytes], Callable[[], None]], Iterator[bytes]]
SetCookie = Callable[[Response, str, int], None]


async def await_write(coro: Coroutine[Any, Any, Any]) -> None:
    """Correct: the write finishes (or fails) before the request goes on."""
    await coro


def client_per_request(url: str, retry: Retry | None) -> tuple[aredis.Redis, bool]:
    """Correct: a client made in this request's event loop, closed by the request (owned)."""
    return store.new_client(url, retry), True


async def append_correct(r: aredis.Redis, sid: str, rows: list[Row], ttl_ms: int) -> object:
    return await store.append_idempotent(r, sid, rows, ttl_ms)


def raise_unavailable(exc: BaseException, what: str) -> None:
    """Correct: a failed store step answers 503, so the page marks the message "not saved"."""
    raise ApiError(503, "store_unavailable", f"{what} failed: {type(exc).__name__}: {exc}")


@dataclass(frozen=True)
class Behaviour:
    run_write: RunWrite = await_write
    client: ClientSource = client_per_request
    retry: Retry | None = None  # client-level retries: off
    append: Append = append_correct
    read: Read = store.read_history  # the conversation, oldest first
    on_store_error: OnStoreError = raise_unavailable
    # Streamed turns: None = stored by the view before the first token leaves; else the
    # stream stores the turn itself (save_at_stream_end: after its last token).
    stream_save: StreamSave | None = None
    set_cookie: SetCookie = session.set_persistent  # survives a browser restart (Max-Age)


CORRECT = Behaviour()


@dataclass(frozen=True)
class Defect:
    name: str
    summary: str
    apply: Callable[[Behaviour], Behaviour]


REGISTRY: dict[str, Defect] = {}


def register(name: str, summary: str) -> Callable[[Callable[[Behaviour], Behaviour]], Callable[[Behaviour], Behaviour]]:
    def deco(fn: Callable[[Behaviour], Behaviour]) -> Callable[[Behaviour], Behaviour]:
        if name in REGISTRY:
            raise ValueError(f"defect {name!r} registered twice")
        REGISTRY[name] = Defect(name, summary, fn)
        return fn

    return deco


class UnknownDefect(ValueError):
    def __init__(self, names: Iterable[str]) -> None:
        self.names = sorted(names)
        super().__init__(f"unknown defect(s) {', '.join(self.names)}; valid: {', '.join(REGISTRY)}")


def behaviour(defects: Iterable[str]) -> Behaviour:
    """The Behaviour of a profile; raises UnknownDefect naming the bad names."""
    wanted = set(defects)
    unknown = wanted - REGISTRY.keys()
    if unknown:
        raise UnknownDefect(unknown)
    b = CORRECT
    for name, defect in REGISTRY.items():  # registry order: composition is deterministic
        if name in wanted:
            b = defect.apply(b)
    return b


# The incident's backend (facts.md): these four together.
INCIDENT = ("fire_and_forget", "ttl_set_once", "shared_loop_client", "session_cookie")

# Registration order is composition order (blind_retry before ttl_set_once: see ttl_set_once).
from services.chat.defects import (  # noqa: E402,F401  (modules register themselves)
    fire_and_forget,
    blind_retry,
    ttl_set_once,
    shared_loop_client,
    swallowed_errors,
    save_at_stream_end,
    session_cookie,
    read_modify_write,
)
