"""A chat backend in Starlette alone (no FastAPI, no OpenAPI document), its conversations kept
as Redis Streams through redis.asyncio: an app shaped unlike the lab's own.

    REDIS_URL=redis://127.0.0.1:16380/0 PORT=18213 python examples/starlette_stream_app.py

- POST /api/chat  {"prompt": "...", "conversation_id": "<id>"}: the human's entry XADDed to
  ``thread:<id>:events`` (fields ``who`` and ``text``) with its TTL renewed (EXPIRE, in one
  MULTI/EXEC), the turn counted (HINCRBY ``thread:<id>:meta``), the assistant's entry the same way,
  then {"conversation_id": id, "output": "..."}. A
  first message without ``conversation_id`` starts a conversation: its id comes with the answer.
- GET /api/history?conversation_id=<id>: {"items": [{"who": "human" | "ai", "text": ...}]},
  oldest first (XRANGE).

Correct: each entry is awaited before the answer. STREAM_BUGS=fire_and_forget (a bug): the
assistant's entry is written by a task nobody awaits -- the answer leaves first, and a refresh
or a failed write in between loses it.
"""

from __future__ import annotations

import asyncio
import os
import uuid

import redis.asyncio as aioredis
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

# No retries: a reply lost after Redis applied an append would append it again (redis-py's default).
R = aioredis.from_url(os.environ["REDIS_URL"], socket_timeout=5, socket_connect_timeout=3, retry=None)
BUGS = set(filter(None, os.environ.get("STREAM_BUGS", "").split(",")))
TTL_S = 3600
_background: set[asyncio.Task[None]] = set()  # held, so the loop does not drop them mid-write


def _key(cid: str) -> str:
    return f"thread:{cid}:events"


async def _remember(cid: str, who: str, text: str) -> None:
    """The entry and its TTL in one transaction: a request that fails between two commands
    would keep the entry with the TTL not renewed."""
    async with R.pipeline(transaction=True) as tx:
        tx.xadd(_key(cid), {"who": who, "text": text})
        tx.expire(_key(cid), TTL_S)
        await tx.execute()


async def _reply(cid: str, answer: str) -> None:
    """The assistant's entry, after the conversation's bookkeeping (its turn count, one round trip)."""
    await R.hincrby(f"thread:{cid}:meta", "turns", 1)
    await _remember(cid, "ai", answer)


async def chat(request: Request) -> JSONResponse:
    try:
        body = await request.json()
    except ValueError:
        return JSONResponse({"detail": "a JSON body is required"}, status_code=400)
    text = str(body.get("prompt") or "").strip()
    if not text:
        return JSONResponse({"detail": "prompt is required"}, status_code=422)
    cid = str(body.get("conversation_id") or uuid.uuid4().hex)
    await _remember(cid, "human", text)
    answer = f"Echo ({len(text.split())} words): {text[:40]}"
    if "fire_and_forget" in BUGS:
        task = asyncio.get_running_loop().create_task(_reply(cid, answer))
        _background.add(task)
        task.add_done_callback(_background.discard)
    else:
        await _reply(cid, answer)
    return JSONResponse({"conversation_id": cid, "output": answer})


async def history(request: Request) -> JSONResponse:
    cid = request.query_params.get("conversation_id")
    if not cid:
        return JSONResponse({"items": []})
    try:
        entries = await R.xrange(_key(cid))
    except aioredis.ConnectionError:
        # A read is safe to repeat: a pooled connection Redis dropped while it sat idle (an
        # outage the pool has not noticed) fails once, then the pool dials anew.
        entries = await R.xrange(_key(cid))
    items = [{"who": f[b"who"].decode(), "text": f[b"text"].decode()} for _, f in entries]
    return JSONResponse({"conversation_id": cid, "items": items})


app = Starlette(routes=[Route("/api/chat", chat, methods=["POST"]), Route("/api/history", history)])

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(os.environ["PORT"]), log_level="warning")
