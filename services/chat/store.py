"""Conversation storage in Redis, done right: these are the correct profile's building blocks.

A conversation is the list ``chat:<session>`` of JSON rows ``{"id", "role", "content"}``,
oldest first. Defect modules (services/chat/defects/) swap single steps for the incident's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import redis.asyncio as aredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from services.chat import config, session

# What counts as "Redis is unavailable" (503). RuntimeError is what a client used from the wrong
# event loop raises ("attached to a different loop", "Event loop is closed").
STORE_ERRORS: tuple[type[BaseException], ...] = (RedisError, OSError, RuntimeError)
TRANSIENT_ERRORS = (RedisConnectionError, RedisTimeoutError)


@dataclass(frozen=True)
class Row:
    id: str        # the client's message id; the user row and its reply share it
    role: str      # "user" | "assistant"
    content: str

    @property
    def row_id(self) -> str:
        return f"{self.id}:{self.role}"

    def encode(self) -> str:
        return json.dumps({"id": self.id, "role": self.role, "content": self.content},
                          separators=(",", ":"))

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


async def append_idempotent(r: aredis.Redis, sid: str, rows: list[Row], ttl_ms: int,
                            attempts: int = 2) -> tuple[int, int]:
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
            added, length = await r.eval(_APPEND_IDEMPOTENT, 2, session.key(sid),
                                         session.ids_key(sid), *args)
            return int(added), int(length)
        except TRANSIENT_ERRORS:
            if attempt == attempts:
                raise
    raise AssertionError("unreachable")


async def read_history(r: aredis.Redis, sid: str) -> list[Row]:
    raw = await r.lrange(session.key(sid), 0, -1)
    return [row for row in (Row.decode(x) for x in raw) if row is not None]
