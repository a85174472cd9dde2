"""A chat backend on Flask and redis-py, run by its team with Docker Compose (../compose.yaml),
served by gunicorn (two worker processes, threads in each): a target for `lab investigate` that
lives in a compose file of its own, built FROM python:3.12-slim with `pip install -r
requirements.txt`. Its Redis has a password and the app uses db 2 (both in REDIS_URL).
Correct by default: each turn is stored, in one MULTI (RPUSH, EXPIRE), before the reply is sent;
a failed store answers 503.

Contract (REDIS_URL from the environment):
  The conversation is the `chat_sid` cookie (set by the first request that has none; HttpOnly).
  POST /v1/chat {"text": non-empty string <= 2000}
    -> 200 {"answer": ...} once the turn is stored; 400 {"error"} for a bad body;
       503 {"error": "store unavailable"} when the store fails.
  GET /v1/chat -> 200 {"turns": [{"who": "human"|"ai", "text"}...]} oldest first; 503 when the
    store fails. Not cacheable.
  GET /v1/ping -> 200 {"pong": true}. Errors are JSON.
  Storage: Redis list chat:{sid}:turns (db 2), each row JSON {"who", "text", "at"}, TTL 1 day
  renewed at every append.

CHAT_BUGS (comma-separated; empty = correct):
  background_save  the turn is handed to a thread pool and the answer sent at once; the pool's
                   failures are never looked at (a Future nobody reads): under a Redis outage the
                   page shows an answer that was never stored
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import redis
from flask import Flask, g, jsonify, request

KNOWN_BUGS = {"background_save"}
BUGS = {b.strip() for b in os.environ.get("CHAT_BUGS", "").split(",") if b.strip()}
if BUGS - KNOWN_BUGS:
    sys.exit(f"CHAT_BUGS: unknown {sorted(BUGS - KNOWN_BUGS)}; known: {sorted(KNOWN_BUGS)}")
if not os.environ.get("REDIS_URL"):
    sys.exit("REDIS_URL is required (e.g. redis://default:secret@cache:6379/2)")

TTL_S = 24 * 3600
MAX_TEXT = 2000
COOKIE = "chat_sid"
log = logging.getLogger("chat")

# Bounded: a command fails within seconds when Redis is unreachable or stalled; no retry (an
# RPUSH whose reply was lost may have been applied).
store = redis.Redis.from_url(
    os.environ["REDIS_URL"], socket_timeout=5, socket_connect_timeout=3, retry_on_timeout=False, decode_responses=True
)
background = ThreadPoolExecutor(max_workers=4)
app = Flask(__name__)


def key(sid: str) -> str:
    return f"chat:{sid}:turns"


def save(sid: str, rows: list[dict[str, object]]) -> None:
    pipe = store.pipeline(transaction=True)
    pipe.rpush(key(sid), *(json.dumps(r) for r in rows))
    pipe.expire(key(sid), TTL_S)
    pipe.execute()


def answer_to(text: str) -> str:
    words = len(text.split())
    return f"Noted ({words} word{'s' if words != 1 else ''}): {text[:80]}"


@app.before_request
def session() -> None:
    sid = request.cookies.get(COOKIE, "")
    g.new = not (len(sid) == 32 and sid.isalnum())
    g.sid = uuid.uuid4().hex if g.new else sid


@app.after_request
def cookie_and_cache(resp):  # type: ignore[no-untyped-def]
    if g.get("new"):
        resp.set_cookie(COOKIE, g.sid, httponly=True, samesite="Lax", max_age=30 * 24 * 3600)
    resp.headers["Cache-Control"] = "no-store"
    return resp


@app.get("/v1/ping")
def ping():  # type: ignore[no-untyped-def]
    return jsonify(pong=True)


@app.get("/v1/chat")
def history():  # type: ignore[no-untyped-def]
    try:
        rows = [json.loads(r) for r in store.lrange(key(g.sid), 0, -1)]
    except redis.RedisError as exc:
        log.warning("history read failed: %s", exc)
        return jsonify(error="store unavailable"), 503
    return jsonify(turns=[{"who": r["who"], "text": r["text"]} for r in rows])


@app.post("/v1/chat")
def chat():  # type: ignore[no-untyped-def]
    body = request.get_json(silent=True)
    text = body.get("text") if isinstance(body, dict) else None
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT:
        return jsonify(error=f"'text' must be a non-empty string of at most {MAX_TEXT} characters"), 400
    answer = answer_to(text)
    now = time.time()
    rows: list[dict[str, object]] = [
        {"who": "human", "text": text, "at": now},
        {"who": "ai", "text": answer, "at": now},
    ]
    if "background_save" in BUGS:
        background.submit(save, g.sid, rows)  # the Future is dropped: its exception is never seen
        return jsonify(answer=answer)
    try:
        save(g.sid, rows)
    except redis.RedisError as exc:
        log.warning("store failed: %s", exc)
        return jsonify(error="store unavailable"), 503
    return jsonify(answer=answer)


@app.errorhandler(404)
@app.errorhandler(405)
@app.errorhandler(500)
def as_json(err):  # type: ignore[no-untyped-def]
    code = getattr(err, "code", 500) or 500
    return jsonify(error=getattr(err, "description", "internal error")), code
