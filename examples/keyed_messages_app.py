"""A chat that keeps each message under a key of its own: a target for `lab investigate` shaped
unlike the others (one key a conversation everywhere else). Each message is a Redis Hash
``note:<uuid>`` (author, body, at); the conversation is a Sorted Set ``thread:<sid>:order`` of
those uuids scored by time -- the index holds no text. Both get a 2 h TTL with every write.

    REDIS_URL=redis://127.0.0.1:6379/0 PORT=18240 python examples/keyed_messages_app.py

Contract (127.0.0.1 only):
  POST /v1/messages {"body": "..."} -> 201 {"answer": {"author": "ai", "body": "..."}}; the session
    is the cookie ``uid`` set by this first POST (none on GET); no body -> 422 JSON; Redis failing
    -> 502 JSON {"detail": ...}.
  GET /v1/messages -> {"data": [{"author": "human" | "ai", "body": "..."}]}, newest first.
  GET /ping -> "pong".

Its Redis client retries a command twice on a connection error: an outage closes the pooled
connections, and without retries the first command on one of them fails (redis-py's from_url
retries none) -- a history read after the outage answered 502 (1 of 12 trials of `down`).
Retrying is safe here: every write names its uuid, so a write sent twice stores one message.

KPM_BUGS (comma-separated):
  swallow      a failed store is logged and the answer sent all the same (201).
  lazy_index   the message's hash is stored, awaited; its uuid is added to the thread's index by
               a task nobody awaits (after one more round trip): a refresh right after the answer
               can miss the turn, and an index write that fails is never seen.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import time
import uuid

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
import uvicorn
from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse

BUGS = set(filter(None, os.environ.get("KPM_BUGS", "").split(",")))
TTL_S = 7200
log = logging.getLogger("keyed")
app = FastAPI()
r = aioredis.from_url(
    os.environ["REDIS_URL"],
    socket_timeout=5,
    decode_responses=True,
    retry=Retry(NoBackoff(), 2),
    retry_on_error=[RedisConnectionError],
)
_pending: set[asyncio.Task[None]] = set()


def _index(sid: str) -> str:
    return f"thread:{sid}:order"


async def _add_to_index(sid: str, mid: str, at: float) -> None:
    async with r.pipeline(transaction=True) as p:
        p.zadd(_index(sid), {mid: at})
        p.expire(_index(sid), TTL_S)
        await p.execute()


async def _lazy_index(sid: str, mid: str, at: float) -> None:
    try:
        await r.ping()  # "the index can wait": one more round trip before it is written
        await _add_to_index(sid, mid, at)
    except Exception as exc:  # noqa: BLE001
        log.warning("index write failed: %s", exc)


async def _store(sid: str, author: str, body: str) -> None:
    mid, at = uuid.uuid4().hex, time.time()
    async with r.pipeline(transaction=True) as p:
        p.hset(f"note:{mid}", mapping={"author": author, "body": body, "at": str(at)})
        p.expire(f"note:{mid}", TTL_S)
        await p.execute()
    if "lazy_index" in BUGS:
        task = asyncio.create_task(_lazy_index(sid, mid, at))
        _pending.add(task)
        task.add_done_callback(_pending.discard)
    else:
        await _add_to_index(sid, mid, at)


@app.get("/ping")
async def ping() -> PlainTextResponse:
    return PlainTextResponse("pong")


@app.post("/v1/messages")
async def send(request: Request) -> Response:
    try:
        data = await request.json()
    except ValueError:
        data = None
    body = data.get("body") if isinstance(data, dict) else None
    if not isinstance(body, str) or not body.strip():
        return JSONResponse({"detail": "body: a non-empty string is required"}, status_code=422)
    sid = request.cookies.get("uid") or secrets.token_hex(10)
    answer = f"Noted ({len(body.split())} words)."
    try:
        await _store(sid, "human", body)
        await _store(sid, "ai", answer)
    except Exception as exc:  # noqa: BLE001
        if "swallow" not in BUGS:
            return JSONResponse({"detail": f"store unavailable: {type(exc).__name__}"}, status_code=502)
        log.warning("store failed, answering anyway: %s", exc)
    resp = JSONResponse({"answer": {"author": "ai", "body": answer}}, status_code=201)
    if "uid" not in request.cookies:
        resp.set_cookie("uid", sid, max_age=30 * 86400, httponly=True, samesite="lax")
    return resp


@app.get("/v1/messages")
async def history(request: Request) -> Response:
    sid = request.cookies.get("uid")
    if not sid:
        return JSONResponse({"data": []})
    try:
        ids = await r.zrevrange(_index(sid), 0, -1)
        async with r.pipeline(transaction=False) as p:
            for mid in ids:
                p.hgetall(f"note:{mid}")
            notes = await p.execute()
    except Exception as exc:  # noqa: BLE001
        log.warning("history read failed: %r", exc, exc_info=True)
        return JSONResponse({"detail": f"store unavailable: {type(exc).__name__}"}, status_code=502)
    return JSONResponse({"data": [{"author": n["author"], "body": n["body"]} for n in notes if n]})


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(os.environ["PORT"]), log_level="warning")
