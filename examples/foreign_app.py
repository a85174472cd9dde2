"""A small chat backend in another style, to show what a target spec copes with: no health
endpoint, no message ids, history as newest-first "role:content" strings under $.messages, a
cookie named `sid`, and HTML 500 pages. Stdlib HTTP server + synchronous redis-py; correct (each
write awaited, the TTL renewed atomically with it), so `lab investigate` should find nothing.
GET / serves its own chat page (inline JS; the DOM contract is in PAGE below).

    REDIS_URL=redis://127.0.0.1:16380/0 PORT=18191 python examples/foreign_app.py

FOREIGN_BUGS (comma-separated; empty = correct) switches on real-world mistakes, one at a time
or together, so each of the lab's diagnoses can be shown against a real app:
  ack_early     answer first, write afterwards in a thread          -> acked_too_fast
  cap_history   LTRIM to the newest FOREIGN_CAP_ROWS rows (4)        -> history_capped
  stale_cache   history served from a per-session stale-while-revalidate cache (copies up to
                FOREIGN_CACHE_MS old, 5000) that writes do not invalidate -> stale_reads
                (FOREIGN_CACHE_SEND_FILLS=0 with a long FOREIGN_CACHE_MS: the page right after
                the sends shows the empty history it read on open)
  no_ttl        the conversation key never gets a TTL               -> no_ttl
  out_of_order  the two rows of a turn written by two concurrent coroutines on one long-lived
                asyncio loop (a daemon thread; a redis.asyncio client bound to it), each after a
                short jittered async step (a stand-in for a moderation call on the question,
                FOREIGN_MODERATION_MS "1-6", and an embedding of the answer, FOREIGN_EMBEDDING_MS
                "1-6"): both awaited before the answer, so nothing acknowledged is unstored and
                each row gets its TTL atomically, but not ordered -- the reply is often stored
                before its question -> writes_out_of_order
  read_modify_write  the conversation kept as one JSON document ({"messages": [...]}, a Redis
                string): GET it, add the turn in Python, SET it back (with its TTL) -- no WATCH,
                no script: two tabs sending at once both read the same document and the later
                SET drops the other tab's turn -> lost_update
  repeat_replies  the assistant always answers the same text ("Hello! How can I help?"); the
                app is otherwise correct: equal replies are not duplicates -> no anomaly
  ttl_two_commands  the append and the TTL renewal as two commands (LPUSH, then EXPIRE; no
                MULTI), and the answer needs no history read, so the append is a send's first
                command: a send whose LPUSH reply is lost (connection reset -> 500) stored the
                turn but skipped the EXPIRE; the next acknowledged write renews it
                -> ttl_skipped_on_error (not ttl_not_renewed: every acknowledged write renews)
  write_after_answer  the turn stored once the answer has been sent (as a framework's background
                task runs after the response): the user's row, then the reply's, then EXPIRE,
                each its own awaited command, in order. Nothing is lost and every write renews
                the TTL, but a refresh right after the answer reads the history without that
                turn, which appears a few round trips later -> stale_reads (not a TTL cause:
                under latency each step is one round trip apart)
  cookie_path   the session cookie set by the send route only, scoped to it (Path=/api/send, as
                `set_cookie(..., path=request.path)` does); the history route, outside that path,
                never receives it and answers an empty list for "no session". Every turn is
                stored; every refresh shows an empty conversation -> session_cookie_path
  slow_read     the history read as slow as the writes: EXISTS, then TYPE, then LRANGE, each
                awaited (as a session check and a type guard do) -- with write_after_answer, a
                refresh right after the answer reads the list after the turn's background chain
                has finished, so the page shows every turn and only the store's record (MONITOR)
                shows the rows landing after the answer -> stored_after_answer
  reversed_history  the history stored oldest first (RPUSH) while the read path still serves the
                list as is to a page and API that expect newest first: every conversation shows
                upside down, in every trial, with nothing racing -> history_reversed (not
                writes_out_of_order)
  worker_cache  each worker process keeps the histories it read in a TTL cache of its own
                (FOREIGN_WORKER_CACHE_MS, 2000, as a per-process TTLCache does) and drops a
                session's copy when it takes that session's send -- in its own memory only. With
                FOREIGN_WORKERS=2 a read that lands on the other worker serves its older copy until
                it expires: right after an answer the page may lack the turn Redis already holds
                -> history_from_copy (a race at its rate: the kernel picks the worker)

  history_cookie  the history route reads the session under the cookie's new name (`session`,
                a rename made in that route only; the send route still sets and reads `sid`):
                absent, it takes a fresh id and reads that conversation's key -- an empty one.
                Every turn is stored under `sid`'s key; every refresh shows an empty
                conversation, and the store's record shows the read going to another key
                -> history_from_another_key

FOREIGN_GREETING=1 (not a bug): a greeting set in Redis as the app starts (`conv:greeting`, a key
of the conversations' shape, as a deploy's config often is) and read by every history request.

FOREIGN_WORKERS (default 1): worker processes forked after the socket is bound, each taking
connections from it (a pre-fork server); every worker stops with the first, or its parent.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import random
import threading
import time
import uuid
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import redis
import redis.asyncio

TTL_S = 7 * 24 * 3600
r = redis.Redis.from_url(os.environ["REDIS_URL"], socket_timeout=5, socket_connect_timeout=3, retry=None)

KNOWN_BUGS = {
    "ack_early",
    "cap_history",
    "stale_cache",
    "no_ttl",
    "out_of_order",
    "repeat_replies",
    "ttl_two_commands",
    "read_modify_write",
    "write_after_answer",
    "slow_read",
    "reversed_history",
    "cookie_path",
    "worker_cache",
    "history_cookie",
}
BUGS = {b.strip() for b in os.environ.get("FOREIGN_BUGS", "").split(",") if b.strip()}
if BUGS - KNOWN_BUGS:
    raise SystemExit(f"FOREIGN_BUGS: unknown {sorted(BUGS - KNOWN_BUGS)}; known: {sorted(KNOWN_BUGS)}")
CAP_ROWS = int(os.environ.get("FOREIGN_CAP_ROWS", "4"))
CACHE_S = int(os.environ.get("FOREIGN_CACHE_MS", "5000")) / 1000
SEND_FILLS = os.environ.get("FOREIGN_CACHE_SEND_FILLS", "1") != "0"
_cache: dict[str, tuple[float, list[str]]] = {}  # stale_cache: sid -> (read at, history)
_refreshing: set[str] = set()
_cache_lock = threading.Lock()
SAME_REPLY = "Hello! How can I help?"  # repeat_replies
WORKERS = int(os.environ.get("FOREIGN_WORKERS", "1"))
WORKER_CACHE_S = int(os.environ.get("FOREIGN_WORKER_CACHE_MS", "2000")) / 1000
_mine: dict[str, tuple[float, list[str]]] = {}  # worker_cache: this process's copies, sid -> (read at, history)
GREETING_KEY = "conv:greeting" if os.environ.get("FOREIGN_GREETING", "0") == "1" else None
if GREETING_KEY:
    r.set(GREETING_KEY, "Welcome back!")  # set up before any conversation, never written again


def _ms_range(name: str, default: str) -> tuple[float, float]:
    lo, _, hi = os.environ.get(name, default).partition("-")
    return float(lo) / 1000, float(hi or lo) / 1000


MODERATION_S = _ms_range("FOREIGN_MODERATION_MS", "1-6")  # out_of_order
EMBEDDING_S = _ms_range("FOREIGN_EMBEDDING_MS", "1-6")
if "out_of_order" in BUGS:
    # One event loop for the whole process, running in a daemon thread, and a redis.asyncio
    # client created on it (its connections belong to that loop); handler threads hand it
    # coroutines with run_coroutine_threadsafe.
    _loop = asyncio.new_event_loop()
    threading.Thread(target=_loop.run_forever, name="writes-loop", daemon=True).start()

    async def _client() -> "redis.asyncio.Redis":
        return redis.asyncio.Redis.from_url(
            os.environ["REDIS_URL"], socket_timeout=5, socket_connect_timeout=3, retry=None
        )

    ar = asyncio.run_coroutine_threadsafe(_client(), _loop).result(timeout=10)

PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>foreign chat</title>
<style>body{font-family:sans-serif;max-width:40em;margin:2em auto} li[data-role=bot]{color:#355}</style>
</head><body><h1>foreign chat</h1>
<ol id="messages"></ol>
<p id="error" hidden></p>
<form id="form"><input id="msg" autocomplete="off" autofocus> <button id="send">Send</button></form>
<script>
const list = document.getElementById("messages"), err = document.getElementById("error");
const input = document.getElementById("msg"), button = document.getElementById("send");
function showError(text) { err.textContent = text; err.hidden = false; }
async function load() {  // the API is newest first: render oldest first
  const resp = await fetch("/api/messages", {credentials: "same-origin"});
  if (!resp.ok) throw new Error("history: HTTP " + resp.status);
  const items = (await resp.json()).messages.slice().reverse();
  list.textContent = "";
  for (const item of items) {
    const i = item.indexOf(":");
    const li = document.createElement("li");
    li.className = "msg"; li.dataset.role = item.slice(0, i); li.textContent = item.slice(i + 1);
    list.appendChild(li);
  }
}
async function send() {
  delete document.body.dataset.idle;
  button.disabled = true;
  try {
    const resp = await fetch("/api/send", {method: "POST", credentials: "same-origin",
      headers: {"Content-Type": "application/json"}, body: JSON.stringify({text: input.value})});
    if (!resp.ok) throw new Error("send: HTTP " + resp.status);
    input.value = "";
    err.hidden = true;
    await load();
  } catch (e) {
    showError(String(e.message || e));
  } finally {
    button.disabled = false;
    document.body.dataset.idle = "1";
  }
}
document.getElementById("form").addEventListener("submit", ev => { ev.preventDefault(); send(); });
load().catch(e => showError(String(e.message || e))).finally(() => { document.body.dataset.loaded = "1"; });
</script></body></html>"""


def _document(key: str) -> list[str]:
    """read_modify_write: the conversation as one JSON document, newest first."""
    raw = r.get(key)
    return list(json.loads(raw)["messages"]) if raw else []


def _read(sid: str) -> list[str]:
    if "read_modify_write" in BUGS:
        items = _document(f"conv:{sid}")
    else:
        if "slow_read" in BUGS:  # two more round trips before the read itself
            r.exists(f"conv:{sid}")
            r.type(f"conv:{sid}")
        items = [x.decode() for x in r.lrange(f"conv:{sid}", 0, -1)]
    if "stale_cache" in BUGS:
        with _cache_lock:
            _cache[sid] = (time.monotonic(), items)
    return items


def _refresh(sid: str) -> None:
    try:
        _read(sid)
    except redis.RedisError:
        pass  # the next read tries again
    finally:
        with _cache_lock:
            _refreshing.discard(sid)


def history(sid: str) -> list[str]:
    """The conversation, newest first (LPUSH)."""
    if "worker_cache" in BUGS:
        # Bug: a cache per process -- another worker's writes never reach this copy.
        with _cache_lock:
            hit = _mine.get(sid)
        if hit is not None and time.monotonic() - hit[0] < WORKER_CACHE_S:
            return hit[1]
        items = _read(sid)
        with _cache_lock:
            _mine[sid] = (time.monotonic(), items)
        return items
    if "stale_cache" in BUGS:
        # Bug: a per-session stale-while-revalidate cache (an in-process dict) that no write
        # invalidates: a copy younger than CACHE_S is served at once and refreshed in the
        # background for the next read -- so the read right after a send misses that send.
        with _cache_lock:
            hit = _cache.get(sid)
            fresh_enough = hit is not None and time.monotonic() - hit[0] < CACHE_S
            start = fresh_enough and sid not in _refreshing
            if start:
                _refreshing.add(sid)
        if hit is not None and fresh_enough:
            if start:
                threading.Thread(target=_refresh, args=(sid,), daemon=True).start()
            return hit[1]
    return _read(sid)


def append(key: str, text: str, answer: str) -> None:
    if "read_modify_write" in BUGS:
        # Bug: read the document, add the turn, write it back. Another request's SET between
        # this GET and this SET is overwritten: its turn is gone although it was answered.
        items = _document(key)
        items[:0] = [f"bot:{answer}", f"user:{text}"]
        if "cap_history" in BUGS:
            items = items[:CAP_ROWS]
        r.set(key, json.dumps({"messages": items}), ex=None if "no_ttl" in BUGS else TTL_S)
        return
    if "ttl_two_commands" in BUGS:
        # Bug: the append and the TTL renewal as two round trips, not one transaction: a send
        # that fails after the LPUSH (its reply lost: ConnectionError, HTTP 500) stored the
        # turn and skipped the EXPIRE. The next acknowledged write renews the TTL.
        r.lpush(key, f"user:{text}", f"bot:{answer}")
        if "cap_history" in BUGS:
            r.ltrim(key, 0, CAP_ROWS - 1)
        if "no_ttl" not in BUGS:
            r.expire(key, TTL_S)
        return
    with r.pipeline(transaction=True) as p:  # both rows and the TTL renewal, or nothing
        if "reversed_history" in BUGS:
            # Bug: the store switched to appending (oldest first); the read path below still
            # serves the list as the newest-first history the API promises.
            p.rpush(key, f"user:{text}", f"bot:{answer}")
        else:
            p.lpush(key, f"user:{text}", f"bot:{answer}")
        if "cap_history" in BUGS:
            # Bug: "keep the prompt small" done on the stored history itself -- the oldest
            # turns are deleted, not merely left out of the model's context.
            p.ltrim(key, 0, CAP_ROWS - 1)
        if "no_ttl" not in BUGS:  # bug no_ttl: the EXPIRE step forgotten (keys never expire)
            p.expire(key, TTL_S)
        p.execute()


async def _store(key: str, row: str, step_s: tuple[float, float]) -> None:
    """out_of_order: one row, after a short async step of its own (a stand-in for a moderation
    or embedding call, a few ms), with its TTL renewal in the same transaction."""
    await asyncio.sleep(random.uniform(*step_s))
    if "ttl_two_commands" in BUGS:
        await ar.lpush(key, row)
        if "cap_history" in BUGS:
            await ar.ltrim(key, 0, CAP_ROWS - 1)
        if "no_ttl" not in BUGS:
            await ar.expire(key, TTL_S)
        return
    async with ar.pipeline(transaction=True) as p:
        p.lpush(key, row)
        if "cap_history" in BUGS:
            p.ltrim(key, 0, CAP_ROWS - 1)
        if "no_ttl" not in BUGS:
            p.expire(key, TTL_S)
        await p.execute()


def _store_later(key: str, row: str, step_s: tuple[float, float]) -> "concurrent.futures.Future[None]":
    return asyncio.run_coroutine_threadsafe(_store(key, row, step_s), _loop)


def _store_after_answer(key: str, text: str, answer: str) -> None:
    """write_after_answer: after the response is out, one command at a time, each awaited. An
    error has no one left to answer: it ends the handler (the server logs it)."""
    r.lpush(key, f"user:{text}")
    r.lpush(key, f"bot:{answer}")
    if "no_ttl" not in BUGS:
        r.expire(key, TTL_S)


def _answer(text: str, n: int | None) -> str:
    if "repeat_replies" in BUGS:
        return SAME_REPLY  # real assistants repeat themselves
    if n is None:
        return f"You said {len(text)} characters."
    return f"You said {len(text)} characters; this is message {n // 2 + 1}."


class Handler(BaseHTTPRequestHandler):
    def _sid(self) -> tuple[str, bool]:
        jar = SimpleCookie(self.headers.get("Cookie", ""))
        sid = jar["sid"].value if "sid" in jar else ""
        return (sid, False) if len(sid) == 32 and sid.isalnum() else (uuid.uuid4().hex, True)

    def _send(self, status: int, body: bytes, ctype: str, sid: str | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        if sid:
            # Bug cookie_path: the cookie's Path is the send route's, so only that route gets it.
            path = "/api/send" if "cookie_path" in BUGS else "/"
            self.send_header("Set-Cookie", f"sid={sid}; Max-Age={30 * 24 * 3600}; Path={path}; HttpOnly; SameSite=Lax")
        self.end_headers()
        self.wfile.write(body)

    def _error(self, exc: Exception) -> None:
        page = f"<html><body><h1>500 Internal Server Error</h1><p>{type(exc).__name__}</p></body></html>"
        self._send(500, page.encode(), "text/html; charset=utf-8")

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        if self.path == "/":
            self._send(200, PAGE.encode(), "text/html; charset=utf-8")
            return
        if self.path != "/api/messages":
            self._send(404, b"<html><body>not found</body></html>", "text/html")
            return
        sid, new = self._sid()
        if GREETING_KEY:
            r.get(GREETING_KEY)  # shown above the conversation by a real page; the lab's needs none
        if "history_cookie" in BUGS:
            # Bug history_cookie: the renamed cookie, which nothing sets -- a fresh id every time.
            jar = SimpleCookie(self.headers.get("Cookie", ""))
            fresh = jar["session"].value if "session" in jar else uuid.uuid4().hex
            self._send(200, json.dumps({"messages": history(fresh)}).encode(), "application/json")
            return
        if "cookie_path" in BUGS:
            # The send route sets the cookie; a history read without one has no conversation.
            self._send(200, json.dumps({"messages": [] if new else history(sid)}).encode(), "application/json")
            return
        try:
            items = history(sid)
        except redis.RedisError as exc:
            self._error(exc)
            return
        self._send(200, json.dumps({"messages": items}).encode(), "application/json", sid)

    def do_POST(self) -> None:  # noqa: N802
        if self.path != "/api/send":
            self._send(404, b"<html><body>not found</body></html>", "text/html")
            return
        sid, _ = self._sid()
        try:
            text = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))["text"]
        except (ValueError, KeyError, TypeError):
            self._send(400, b'{"error": "body must be {\\"text\\": ...}"}', "application/json", sid)
            return
        key = f"conv:{sid}"
        if "ack_early" in BUGS:
            # Bug: answer first, persist later (a background thread / task queue the reply does
            # not wait for). The turn is stored eventually; a crash or a Redis error in
            # between loses it silently, and the answer claims what is not yet true.
            answer = _answer(text, None)
            threading.Thread(target=append, args=(key, text, answer), daemon=True).start()
            self._send(200, json.dumps({"answer": answer}).encode(), "application/json", sid)
            return
        if "out_of_order" in BUGS:
            # Bug: the two rows written concurrently on the shared loop to save a round trip --
            # the question's write fired as the request arrives, the reply's as soon as the
            # answer exists. Both are awaited before the answer goes out, but nothing orders
            # them: whichever async step finishes first is stored first.
            writes = [_store_later(key, f"user:{text}", MODERATION_S)]
            try:
                answer = _answer(text, r.llen(key))
                writes.append(_store_later(key, f"bot:{answer}", EMBEDDING_S))
                for w in writes:
                    w.result(timeout=10)
            except (redis.RedisError, concurrent.futures.TimeoutError) as exc:
                self._error(exc)
                return
            self._send(200, json.dumps({"answer": answer}).encode(), "application/json", sid)
            return
        if "write_after_answer" in BUGS:
            # Bug: answer first (the model's context read first, as usual), store the turn once
            # the response has been sent -- the handler's own thread, after the last byte.
            try:
                answer = _answer(text, r.llen(key))
            except redis.RedisError as exc:
                self._error(exc)
                return
            self._send(200, json.dumps({"answer": answer}).encode(), "application/json", sid)
            _store_after_answer(key, text, answer)
            return
        try:
            if "ttl_two_commands" in BUGS:
                # The answer needs no history (no read before the append).
                n = None
            elif "stale_cache" in BUGS:
                # The send path loads the history for the model's context fresh, and that read
                # refills the cache -- with the history as it was BEFORE this turn's write
                # (FOREIGN_CACHE_SEND_FILLS=0: it does not, so the cache keeps what the page read
                # when it opened, before any send).
                n = len(_read(sid)) if SEND_FILLS else r.llen(key)
            elif "read_modify_write" in BUGS:
                n = len(_document(key))
            else:
                n = r.llen(key)
            answer = _answer(text, n)
            append(key, text, answer)
            if "worker_cache" in BUGS:
                with _cache_lock:
                    _mine.pop(sid, None)  # this worker's copy only
        except redis.RedisError as exc:
            self._error(exc)
            return
        self._send(200, json.dumps({"answer": answer}).encode(), "application/json", sid)

    def log_message(self, fmt: str, *args: object) -> None:
        print(fmt % args, flush=True)


def _exit_with(parent: int) -> None:
    """A forked worker ends when the process that forked it does (a SIGKILL of it alone too)."""
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])), Handler)
    first = os.getpid()
    for _ in range(WORKERS - 1):
        if os.fork() == 0:  # a worker: serves the bound socket (redis-py reconnects after a fork)
            threading.Thread(target=_exit_with, args=(first,), daemon=True).start()
            break
    server.serve_forever()
