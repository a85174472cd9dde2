"""A chat backend whose conversations live in SQLite, with Redis as a cache in front of them
(cache-aside, as many apps with a database put Redis): Flask's async views, the conversation's
id a query parameter the first answer gives (``?c=<id>``), every message a row in SQLite.

    REDIS_URL=redis://127.0.0.1:16380/0 PORT=18197 python examples/cache_aside_app.py

- POST /api/chat?c=<id>  {"message": "..."}: the row inserted and committed, the cached history
  deleted (``DEL hist:<id>``: the next read fills it again), then the answer
  {"conversation": id, "answer": "..."}. A first message without ``c`` starts a conversation.
- GET /api/history?c=<id>: the cached history (``GET hist:<id>``, a JSON string); on a miss the
  rows from SQLite, cached with ``SET hist:<id> ... EX 60``, then served oldest first.

Correct: nothing acknowledged is ever lost -- Redis holds a copy, filled when a read misses, and
a refresh always finds the turns (in the cache or, after an invalidation, in SQLite). Redis
down: the history is read from SQLite, a send still commits its row (the invalidation fails
loudly only when the cache could serve a stale copy: answered 503).

CACHE_BUGS=no_invalidate (a bug): the send route forgets the DEL -- a history read served from
the cache, filled before the send, lacks it until the copy expires.
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
import threading
import uuid

import redis
from flask import Flask, jsonify, request

CACHE_TTL_S = 60
KNOWN_BUGS = {"no_invalidate"}
BUGS = {b.strip() for b in os.environ.get("CACHE_BUGS", "").split(",") if b.strip()}
if BUGS - KNOWN_BUGS:
    raise SystemExit(f"CACHE_BUGS: unknown {sorted(BUGS - KNOWN_BUGS)}; known: {sorted(KNOWN_BUGS)}")

r = redis.Redis.from_url(os.environ["REDIS_URL"], socket_timeout=5, socket_connect_timeout=3, retry=None)
_db_dir = tempfile.TemporaryDirectory(prefix="cache-aside-")  # removed with the process
_db_path = os.path.join(_db_dir.name, "chat.db")
_lock = threading.Lock()  # one writer at a time (sqlite3 connections are per thread)
with sqlite3.connect(_db_path) as db:
    db.execute("CREATE TABLE messages (n INTEGER PRIMARY KEY, conv TEXT, role TEXT, content TEXT)")

app = Flask(__name__)


def _rows(conv: str) -> list[dict[str, str]]:
    with sqlite3.connect(_db_path) as db:
        got = db.execute("SELECT role, content FROM messages WHERE conv = ? ORDER BY n", (conv,)).fetchall()
    return [{"role": role, "content": content} for role, content in got]


def _cache_key(conv: str) -> str:
    return f"hist:{conv}"


@app.get("/health")
async def health():  # type: ignore[no-untyped-def]
    return jsonify(ok=True)


@app.post("/api/chat")
async def chat():  # type: ignore[no-untyped-def]
    body = request.get_json(silent=True)
    if not isinstance(body, dict) or not isinstance(body.get("message"), str) or not body["message"]:
        return jsonify(error='body must be {"message": "<non-empty text>"}'), 400
    conv = request.args.get("c") or uuid.uuid4().hex
    text = body["message"]
    answer = f"You said {len(text)} characters."
    with _lock, sqlite3.connect(_db_path) as db:
        db.execute("INSERT INTO messages (conv, role, content) VALUES (?, 'user', ?)", (conv, text))
        db.execute("INSERT INTO messages (conv, role, content) VALUES (?, 'assistant', ?)", (conv, answer))
    if "no_invalidate" not in BUGS:
        try:
            r.delete(_cache_key(conv))
        except redis.RedisError:
            return jsonify(error="stored, but the cached history could not be cleared"), 503
    return jsonify(conversation=conv, answer=answer)


@app.get("/api/history")
async def history():  # type: ignore[no-untyped-def]
    conv = request.args.get("c")
    if not conv:
        return jsonify(messages=[])
    try:
        cached = r.get(_cache_key(conv))
    except redis.RedisError:
        return jsonify(messages=_rows(conv))  # the database holds the truth
    if cached is not None:
        return jsonify(messages=json.loads(cached))
    rows = _rows(conv)
    try:
        r.set(_cache_key(conv), json.dumps(rows), ex=CACHE_TTL_S)
    except redis.RedisError:
        pass  # served from the database; the next read tries the cache again
    return jsonify(messages=rows)


if __name__ == "__main__":
    app.run(host="127.0.0.1", port=int(os.environ["PORT"]), threaded=True)
