"""A chat backend that streams a model's answer to its page: FastAPI on uvicorn, the `openai`
SDK's AsyncOpenAI with ``stream=True`` (reading OPENAI_BASE_URL and OPENAI_API_KEY), redis.asyncio,
and each conversation kept as one JSON document (``convo:<id>:doc``, rewritten whole with its
TTL on every change). The conversation's id comes from POST /api/conversations and travels in
the X-Conversation header.

    REDIS_URL=redis://127.0.0.1:16380/0 OPENAI_BASE_URL=http://127.0.0.1:18411/v1 OPENAI_API_KEY=x \\
    python -m uvicorn --app-dir examples model_fastapi:app --port 18197

POST /api/chat {"prompt": "...", "stream": true} answers text/plain chunks as the model sends
them; without "stream" it answers {"answer": {"text": ...}} once the model is done.

Correct by default: the model's call runs in a task of its own (kept, and awaited by the
request that started it), so a page that goes away mid-answer does not stop the save; the
user's message is stored before the model is called, the reply when its stream ends. When the
model's stream breaks part-way, what had arrived is stored marked ``"interrupted": true`` and
the answer fails (a 502, or the page's stream aborted): nothing pretends it was whole.

MODEL_FASTAPI_BUGS=keep_cut_reply: a broken stream's exception is swallowed and what had arrived
is stored and answered as the reply -- the same record a whole reply gets. After a refresh the
history shows half an answer as the answer -> cut_reply_stored_whole.

MODEL_FASTAPI_BUGS=log_store_error: a failed store of the reply is logged and the stream ends as a
whole answer: the user has a reply Redis refused -> acked_write_refused (write_refused at=answer;
the body is the model's reply to the letter, so the lab can read it as answered).

MODEL_FASTAPI_STORE_ERRORS=text (correct, another style): a failed store of the reply ends the
stream with a line of its own ("[not saved: ...]") instead of aborting it; nothing is drawn.

MODEL_FASTAPI_BUGS=store_after_model: the message and its reply stored together once the model's
stream has ended; a model error (a 429) answers 502 and the message is never stored ->
lost_after_model_error.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import sys
import time
from collections.abc import AsyncIterator

import httpx
import openai
import redis.asyncio as aioredis
from redis.exceptions import RedisError
from fastapi import FastAPI, Header, HTTPException, Request
from fastapi.responses import JSONResponse, StreamingResponse

BUGS = {b.strip() for b in os.environ.get("MODEL_FASTAPI_BUGS", "").split(",") if b.strip()}
KNOWN_BUGS = {"keep_cut_reply", "store_after_model", "log_store_error"}
if BUGS - KNOWN_BUGS:
    raise SystemExit(f"MODEL_FASTAPI_BUGS: unknown {sorted(BUGS - KNOWN_BUGS)}; known: {sorted(KNOWN_BUGS)}")
TTL_S = int(os.environ.get("MODEL_FASTAPI_TTL_S", "7200"))
MODEL = os.environ.get("MODEL_FASTAPI_MODEL", "gpt-4.1-mini")
END, FAILED = object(), object()  # the queue's last item: the reply is whole / the model broke off
ERRORS_IN_TEXT = os.environ.get("MODEL_FASTAPI_STORE_ERRORS", "abort") == "text"

store = aioredis.from_url(os.environ["REDIS_URL"], socket_timeout=5)
client = openai.AsyncOpenAI(timeout=30, max_retries=0)  # the user retries a failed answer
locks: dict[str, asyncio.Lock] = {}  # one writer per document in this process
running: set[asyncio.Task[None]] = set()  # kept until done: a task nobody holds can be collected
app = FastAPI(title="model-fastapi")


def _key(conv: str) -> str:
    return f"convo:{conv}:doc"


async def _load(conv: str) -> dict | None:
    raw = await store.get(_key(conv))
    return json.loads(raw) if raw else None


async def _append(conv: str, *msgs: dict) -> None:
    """The document read, appended to and written back with its TTL, one writer at a time."""
    async with locks.setdefault(conv, asyncio.Lock()):
        doc = await _load(conv) or {"id": conv, "messages": []}
        doc["messages"].extend(msgs)
        doc["updated"] = time.time()
        await store.set(_key(conv), json.dumps(doc), ex=TTL_S)


def _msg(role: str, content: str, **extra: object) -> dict:
    return {"id": secrets.token_hex(8), "role": role, "content": content, "at": time.time(), **extra}


async def _conversation(conv: str | None) -> str:
    if not conv or await store.exists(_key(conv)) == 0:
        raise HTTPException(404, "no such conversation: POST /api/conversations, then send X-Conversation")
    return conv


async def _answer(conv: str, prompt: str, past: list[dict], out: asyncio.Queue) -> None:
    """The model's call, streamed into ``out``; the reply stored when it ends."""
    user = _msg("user", prompt)
    if "store_after_model" not in BUGS:
        await _append(conv, user)  # kept whatever the model does
    messages = [{"role": "system", "content": "You are a helpful assistant."}]
    messages += [{"role": m["role"], "content": m["content"]} for m in past if not m.get("interrupted")]
    messages.append({"role": "user", "content": prompt})
    parts: list[str] = []
    try:
        stream = await client.chat.completions.create(
            model=MODEL, messages=messages, stream=True, stream_options={"include_usage": True}
        )
        async for chunk in stream:
            delta = chunk.choices[0].delta.content if chunk.choices else None
            if delta:
                parts.append(delta)
                await out.put(delta)
    except (openai.APIError, httpx.HTTPError):  # a 429, a 5xx, a stream that broke off
        if "keep_cut_reply" in BUGS and parts:
            await _append(conv, _msg("assistant", "".join(parts)))  # the bug: kept as if whole
            await out.put(END)
            return
        if parts and "store_after_model" not in BUGS:
            await _append(conv, _msg("assistant", "".join(parts), interrupted=True))
        await out.put(FAILED)
        return
    reply = _msg("assistant", "".join(parts))
    try:
        await _append(conv, *([user, reply] if "store_after_model" in BUGS else [reply]))
    except RedisError as exc:
        if "log_store_error" in BUGS:  # the bug: logged, and the answer ends as if it were kept
            print(f"model-fastapi: storing the reply failed: {exc!r}", file=sys.stderr, flush=True)
        elif ERRORS_IN_TEXT:  # the page is told in the text: the headers went out long ago
            await out.put(f"\n[not saved: {type(exc).__name__}]")
        else:
            raise  # the task fails: ended() aborts the page's stream
    await out.put(END)


@app.get("/healthz")
async def healthz() -> dict:
    return {"ok": True}


@app.post("/api/conversations", status_code=201)
async def create() -> dict:
    conv = secrets.token_urlsafe(12)
    await store.set(_key(conv), json.dumps({"id": conv, "messages": []}), ex=TTL_S)
    return {"conversation": {"id": conv}}


@app.get("/api/history")
async def history(x_conversation: str | None = Header(default=None)) -> dict:
    conv = await _conversation(x_conversation)
    doc = await _load(conv) or {"messages": []}
    items = [{"author": "me" if m["role"] == "user" else "bot", "body": m["content"]} for m in doc["messages"]]
    return {"conversation": conv, "items": items[::-1]}  # newest first, as the page lists them


@app.post("/api/chat")
async def chat(request: Request, x_conversation: str | None = Header(default=None)):  # type: ignore[no-untyped-def]
    conv = await _conversation(x_conversation)
    body = await request.json()
    prompt = body.get("prompt") if isinstance(body, dict) else None
    if not isinstance(prompt, str) or not prompt.strip():
        return JSONResponse({"error": 'send {"prompt": "...", "stream": true|false}'}, status_code=400)
    past = (await _load(conv) or {"messages": []})["messages"]
    out: asyncio.Queue = asyncio.Queue()
    task = asyncio.create_task(_answer(conv, prompt, past, out))
    running.add(task)

    def ended(t: asyncio.Task[None]) -> None:
        running.discard(t)
        if not t.cancelled() and t.exception() is not None:
            out.put_nowait(FAILED)  # a store that failed ends the answer instead of leaving it open

    task.add_done_callback(ended)

    async def tokens() -> AsyncIterator[str]:
        while (item := await out.get()) is not END:
            if item is FAILED:
                raise RuntimeError("the model broke off")  # the page's stream is aborted: not whole
            yield item

    if body.get("stream"):
        return StreamingResponse(tokens(), media_type="text/plain; charset=utf-8")
    try:
        text = "".join([t async for t in tokens()])
    except RuntimeError:
        await task
        return JSONResponse({"error": "the model did not finish its answer; send it again"}, status_code=502)
    await task  # the reply is stored: the answer comes after the write
    return {"answer": {"text": text}}


@app.get("/")
async def index() -> str:
    return "POST /api/conversations; POST /api/chat with X-Conversation; GET /api/history"
