"""Conversation storage in Redis, done right: these are the correct profile's building blocks.

A conversation is the list ``chat:<session>`` of JSON rows ``{"id", "role", "content"}``,
oldest first. Defect modules (services/chat/defects/) swap single steps for the incident's; one
(read_modify_write) keeps the same rows as one JSON array under the same key instead, and
``stored`` reads either layout (the lab's final read goes through it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

import redis.asyncio as aredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from services.chat import config, session

if TYPE_CHECKING:
    from redis import Redis as SyncRedis

# What counts as "Redis is unavailable" (503). RuntimeError is what a client used from the wrong
# event loop raises ("attached to a different loop", "Event loop is closed").
STORE_ERRORS: tuple[type[BaseException], ...] = (RedisError, OSError, RuntimeError)
TRANSIENT_ERRORS = (RedisConnectionError, RedisTimeoutError)


@dataclass(frozen=True)
class Row:
    id: str  # the client's message id; the user row and its reply share it
    role: str  # "user" | "assistant"
    content: str

    @property
    def row_id(self) -> str:
        return f"{self.id}:{self.role}"

    def encode(self) -> str:
        return json.dumps({"id": self.id, "role": self.role, "content": self.content}, separators=(",", ":"))

    @classmethod
    def decode(cls, raw: bytes | str) -> "Row | None":
        try:
            d = json.loads(raw)
            return cls(str(d["id"]), str(d["role"]), str(d["content"]))
        except (ValueError, KeyError, TypeError):
            return None

    def as_json(self) -> dict[str, str]:
        return {"id": self.id, "role": self.role, "content": self.content}


def new_client(url: str, retry: Retry | None = None) -> aredis.Redis:
    """A client for the current event loop, with an explicit retry policy and timeouts.

    redis-py 8 retries 10 times by default: a built-in blind retry. The correct profile turns
    client retries off and retries only the idempotent append itself (append_idempotent).

    No connection handshake (RESP2, no CLIENT SETINFO): a connection's first reply is then the
    reply to a real command, so a fault that cuts "the next reply" cuts a write's reply -- the
    case that tells idempotent appends from blind ones -- rather than a handshake.
    """
    return aredis.Redis.from_url(
        url,
        socket_timeout=config.REDIS_SOCKET_TIMEOUT_S,
        socket_connect_timeout=config.REDIS_CONNECT_TIMEOUT_S,
        retry=retry or Retry(NoBackoff(), 0),
        health_check_interval=0,
        protocol=2,
        driver_info=None,
    )


# Append rows whose ids are not yet stored and (ttl_ms > 0) renew the TTL of both keys,
# atomically. Returns {rows added, list length}.
_APPEND_IDEMPOTENT = """
local added = 0
for i = 2, #ARGV, 2 do
  if redis.call('SADD', KEYS[2], ARGV[i]) == 1 then
    redis.call('RPUSH', KEYS[1], ARGV[i + 1])
    added = added + 1
  end
end
if tonumber(ARGV[1]) > 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  redis.call('PEXPIRE', KEYS[2], ARGV[1])
end
return {added, redis.call('LLEN', KEYS[1])}
"""


async def append_idempotent(
    r: aredis.Redis, sid: str, rows: list[Row], ttl_ms: int, attempts: int = 2
) -> tuple[int, int]:
    """Correct append: exactly once per row id, TTL renewed on every write, in one script.
    ``ttl_ms`` 0 leaves the TTL alone. Returns (rows added, list length).

    Retrying is safe here *because* the script is idempotent: a reply lost after the script ran
    makes the retry add nothing.
    """
    args: list[str | int] = [ttl_ms]
    for row in rows:
        args += [row.row_id, row.encode()]
    for attempt in range(1, attempts + 1):
        try:
            added, length = await r.eval(_APPEND_IDEMPOTENT, 2, session.key(sid), session.ids_key(sid), *args)
            return int(added), int(length)
        except TRANSIENT_ERRORS:
            if attempt == attempts:
                raise
    raise AssertionError("unreachable")


async def read_history(r: aredis.Redis, sid: str) -> list[Row]:
    raw = await r.lrange(session.key(sid), 0, -1)
    return [row for row in (Row.decode(x) for x in raw) if row is not None]


def decode_document(raw: bytes | str | None) -> list[Row]:
    """The rows of a conversation kept as one JSON array (read_modify_write's layout)."""
    if not raw:
        return []
    items = json.loads(raw)
    if not isinstance(items, list):
        raise ValueError(f"the conversation document is a {type(items).__name__}, not a list")
    return [row for row in (Row.decode(json.dumps(x)) for x in items) if row is not None]


def encode_document(rows: list[Row]) -> str:
    return json.dumps([row.as_json() for row in rows], separators=(",", ":"))


@dataclass(frozen=True)
class Stored:
    """What Redis holds for a conversation, as the lab reads it at the end of a trial."""

    key: str
    layout: str  # "list" | "document" | "none" (no key)
    pttl_ms: int
    raw: list[str]  # the stored values as text (a document: one value)
    rows: list[Row]


def stored(r: "SyncRedis", sid: str) -> Stored:
    """Read a conversation in either layout with a synchronous client (the lab's final read).
    Raises ValueError for values that are not the service's rows."""
    key = session.key(sid)
    kind = r.type(key)
    kind = kind.decode() if isinstance(kind, bytes) else str(kind)
    pttl = int(r.pttl(key))
    if kind == "list":
        raw = [x.decode() if isinstance(x, bytes) else str(x) for x in r.lrange(key, 0, -1)]
        rows = [Row.decode(x) for x in raw]
        if any(row is None for row in rows):
            raise ValueError(f"{key}: a value is not a row {{id, role, content}}")
        return Stored(key, "list", pttl, raw, [row for row in rows if row is not None])
    if kind == "string":
        doc = r.get(key)
        text = doc.decode() if isinstance(doc, bytes) else str(doc or "")
        return Stored(key, "document", pttl, [text], decode_document(text))
    if kind == "none":
        return Stored(key, "none", pttl, [], [])
    raise ValueError(f"{key} is a Redis {kind}: the service keeps a list or a JSON string")
