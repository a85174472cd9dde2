"""A chat backend that calls a model, in the most common Python deployment: Flask on gunicorn's
sync workers (a connection per request; with --reuse-port each worker has its own socket and the
kernel spreads connections over them, so a browser's requests land on any worker), the
`openai` SDK reading OPENAI_BASE_URL and OPENAI_API_KEY, and the history kept as LangChain's
RedisChatMessageHistory keeps it (JSON messages LPUSHed to ``message_store:<thread>``, read
back with LRANGE and reversed). The page mints its own thread id and sends it as ``?thread=``.

    REDIS_URL=redis://127.0.0.1:16380/0 OPENAI_BASE_URL=http://127.0.0.1:18411/v1 \\
    OPENAI_API_KEY=x WEB_CONCURRENCY=2 python -m gunicorn --reuse-port -b 127.0.0.1:18196 --chdir examples model_flask:app

Correct by default: every turn's prompt is the history read from Redis; the user's message is
stored before the model is called and the reply once it answers (each with the TTL, in one MULTI),
both before the answer is sent; a model error is answered 502 with the message kept.

MODEL_APP_BUGS=worker_memory: each worker keeps its own copy of a thread's messages ("memory",
loaded from Redis the first time the worker sees the thread, then appended to as it answers),
and builds the prompt from it. Redis and the history the page reads stay whole; with one worker
the copy is right too. With two, a worker that did not answer the last turn prompts the model
without it -> the model is told less than the user was acknowledged (model_told_less), and the
page shows nothing wrong.

MODEL_APP_BUGS=store_after_model: the message and the reply stored together once the model has
answered (a common shape: one write per exchange). A model error (a 429) answers 502 and the
user's message is never stored -> lost_after_model_error.

MODEL_APP_BUGS=retry_appends: a failed model call retried by the app (twice), the whole exchange
at a time -- the user's message pushed again before each attempt. A provider that fails once and
recovers leaves the message in the history twice -> stored_twice_after_retry.

MODEL_APP_WINDOW_TURNS=N (a design, not a bug): the model is given the newest N turns only; the
lab reports a context window of N and no defect.
"""

from __future__ import annotations

import json
import os
import time

import redis
from flask import Flask, jsonify, request
import openai
from openai import OpenAI

BUGS = {b.strip() for b in os.environ.get("MODEL_APP_BUGS", "").split(",") if b.strip()}
KNOWN_BUGS = {"worker_memory", "store_after_model", "retry_appends"}
RETRIES = 2  # retry_appends: the app's own retry of a failed exchange
if BUGS - KNOWN_BUGS:
    raise SystemExit(f"MODEL_APP_BUGS: unknown {sorted(BUGS - KNOWN_BUGS)}; known: {sorted(KNOWN_BUGS)}")
TTL_S = int(os.environ.get("MODEL_APP_TTL_S", "3600"))
# A design, not a bug: only the newest N turns go to the model (0: all of them), as apps with a
# context budget do. The lab reports it as a context window and draws no defect from it.
WINDOW_TURNS = int(os.environ.get("MODEL_APP_WINDOW_TURNS", "0"))
MODEL = os.environ.get("MODEL_APP_MODEL", "gpt-4o-mini")
SYSTEM = "You are a concise assistant. Use the conversation so far."

store = redis.Redis.from_url(os.environ["REDIS_URL"], socket_timeout=5, socket_connect_timeout=3)
client = OpenAI(timeout=30, max_retries=0)  # a failed call is the user's to retry, not ours
memory: dict[str, list[dict[str, str]]] = {}  # worker_memory: this worker's own copies
app = Flask(__name__)


def _key(thread: str) -> str:
    return f"message_store:{thread}"


def _load(thread: str) -> list[dict[str, str]]:
    # LangChain's layout: newest first in the list, each {"type": ..., "data": {"content": ...}}.
    rows = [json.loads(raw) for raw in store.lrange(_key(thread), 0, -1)]
    return [{"type": r["type"], "content": r["data"]["content"]} for r in reversed(rows)]


def _push(thread: str, *rows: dict[str, object]) -> None:
    """Rows appended with the TTL renewed, in one MULTI."""
    with store.pipeline(transaction=True) as p:
        for row in rows:
            p.lpush(_key(thread), json.dumps(row))
        p.expire(_key(thread), TTL_S)
        p.execute()


def _thread() -> str | None:
    thread = request.args.get("thread", "")
    return thread if 8 <= len(thread) <= 64 and thread.isalnum() else None


@app.get("/v1/chat/history")
def history():  # type: ignore[no-untyped-def]
    thread = _thread()
    if thread is None:
        return jsonify(error="?thread= must be 8-64 letters or digits"), 400
    turns = [{"who": "human" if m["type"] == "human" else "ai", "text": m["content"]} for m in _load(thread)]
    return jsonify(thread=thread, turns=turns)


@app.post("/v1/chat")
def chat():  # type: ignore[no-untyped-def]
    thread = _thread()
    body = request.get_json(silent=True) or {}
    text = body.get("message")
    if thread is None or not isinstance(text, str) or not text.strip():
        return jsonify(error='send {"message": "..."} with ?thread= (8-64 letters or digits)'), 400
    if "worker_memory" in BUGS:
        past = memory.setdefault(thread, _load(thread))
    else:
        past = _load(thread)
    told = past[-2 * WINDOW_TURNS :] if WINDOW_TURNS else past  # a question and its answer per turn
    messages = [{"role": "system", "content": SYSTEM}]
    messages += [{"role": "user" if m["type"] == "human" else "assistant", "content": m["content"]} for m in told]
    messages.append({"role": "user", "content": text})
    human = {"type": "human", "data": {"content": text}}
    if not BUGS & {"store_after_model", "retry_appends"}:
        _push(thread, human)  # kept whatever the model does: the user sees it after a refresh
    answer = None
    for _ in range(RETRIES + 1 if "retry_appends" in BUGS else 1):
        if "retry_appends" in BUGS:
            _push(thread, human)  # the bug: the whole exchange retried, the message stored again
        try:
            answer = client.chat.completions.create(model=MODEL, messages=messages)  # type: ignore[arg-type]
            break
        except openai.APIError as exc:  # a rate limit, a provider's 5xx, a broken connection
            error = exc
    if answer is None:
        return jsonify(error=f"the model did not answer ({type(error).__name__}); send it again"), 502
    reply = answer.choices[0].message.content or ""
    ai = {"type": "ai", "data": {"content": reply}}
    _push(thread, *([human, ai] if "store_after_model" in BUGS else [ai]))
    if "worker_memory" in BUGS:
        past += [{"type": "human", "content": text}, {"type": "ai", "content": reply}]
    return jsonify(reply=reply, at=time.time())


PAGE = """<!doctype html><title>model chat</title><p>POST /v1/chat?thread=ID {"message": "..."};
GET /v1/chat/history?thread=ID</p>"""


@app.get("/")
def index():  # type: ignore[no-untyped-def]
    return PAGE
