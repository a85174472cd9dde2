"""Tiny LLM-chat web app: aiohttp + redis.asyncio, one Redis HASH per conversation.
(Written without the lab, 2026-12-06; a target of lab investigate: examples/aiohttp-form.toml.
Its page posts a FORM (`q=...`), not JSON; the transcript is served newest first.)

Env:
  REDIS_URL  (default redis://127.0.0.1:6379/0)
  PORT       (default 8080)
  APP_BUGS   comma-separated opt-in bugs: swallow, late_task, overwrite
"""

import asyncio
import json
import logging
import os
import re
import secrets
import time

import redis.asyncio as aioredis
from aiohttp import web

log = logging.getLogger("chat")

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
PORT = int(os.environ.get("PORT", "8080"))
BUGS = {b.strip() for b in os.environ.get("APP_BUGS", "").split(",") if b.strip()}

COOKIE = "chat_id"
COOKIE_MAX_AGE = 30 * 24 * 3600
CONV_TTL = 14 * 24 * 3600
NEXT_FIELD = "_next"
CHAT_ID_RE = re.compile(r"^[0-9a-f]{32}$")

REDIS_KEY = web.AppKey("redis", aioredis.Redis)
TASKS_KEY = web.AppKey("tasks", set)


def conv_key(chat_id: str) -> str:
    return f"conversation:{chat_id}"


# ---------------------------------------------------------------- storage


async def next_seq(r: aioredis.Redis, key: str) -> int:
    if "overwrite" in BUGS:
        # BUG: read-then-write; two concurrent sends can get the same number.
        return await r.hlen(key) + 1
    async with r.pipeline(transaction=True) as pipe:
        pipe.hincrby(key, NEXT_FIELD, 1)
        pipe.expire(key, CONV_TTL)
        seq, _ = await pipe.execute()
    return int(seq)


async def store_message(r: aioredis.Redis, chat_id: str, author: str, body: str) -> int:
    key = conv_key(chat_id)
    seq = await next_seq(r, key)
    entry = {"author": author, "body": body, "t": int(time.time() * 1000)}
    async with r.pipeline(transaction=True) as pipe:
        pipe.hset(key, f"{seq:06d}", json.dumps(entry))
        pipe.expire(key, CONV_TTL)
        await pipe.execute()
    return seq


async def load_transcript(r: aioredis.Redis, chat_id: str) -> list[dict]:
    raw = await r.hgetall(conv_key(chat_id))
    entries = []
    for field in sorted((f for f in raw if f != NEXT_FIELD), reverse=True):  # newest first
        try:
            e = json.loads(raw[field])
        except ValueError:
            log.warning("bad entry %s in %s", field, chat_id)
            continue
        e["seq"] = int(field)
        entries.append(e)
    return entries


# ---------------------------------------------------------------- "model"


async def model_reply(question: str) -> str:
    await asyncio.sleep(0.05)  # pretend inference latency
    words = re.findall(r"\w+", question)
    word = max(words, key=len) if words else "nothing"
    return f"You said something about {word}."


# ---------------------------------------------------------------- handlers


def get_chat_id(request: web.Request) -> str | None:
    cid = request.cookies.get(COOKIE)
    return cid if cid and CHAT_ID_RE.match(cid) else None


def fail(status: int, msg: str) -> web.Response:
    return web.json_response({"ok": False, "error": msg}, status=status)


async def index(request: web.Request) -> web.Response:
    resp = web.Response(text=PAGE, content_type="text/html")
    if get_chat_id(request) is None:
        resp.set_cookie(COOKIE, secrets.token_hex(16), max_age=COOKIE_MAX_AGE, httponly=True, samesite="Lax", path="/")
    return resp


def _log_task_result(tasks: set, task: asyncio.Task) -> None:
    tasks.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.error("background store failed", exc_info=task.exception())


async def send(request: web.Request) -> web.Response:
    chat_id = get_chat_id(request)
    if chat_id is None:
        return fail(400, "no session; load / first")
    form = await request.post()
    q = str(form.get("q", "")).strip()
    if not q:
        return fail(400, "empty message")
    r = request.app[REDIS_KEY]

    if "swallow" in BUGS:
        # BUG: store errors are logged and the client still gets ok=true.
        try:
            await store_message(r, chat_id, "me", q)
        except Exception:
            log.exception("store failed")
    else:
        try:
            await store_message(r, chat_id, "me", q)
        except Exception as exc:
            log.exception("store failed")
            return fail(500, f"store failed: {exc}")

    bot = await model_reply(q)

    if "late_task" in BUGS:
        # BUG: reply written in the background, never awaited before answering.
        tasks = request.app[TASKS_KEY]
        task = asyncio.ensure_future(store_message(r, chat_id, "bot", bot))
        tasks.add(task)
        task.add_done_callback(lambda t: _log_task_result(tasks, t))
    elif "swallow" in BUGS:
        try:
            await store_message(r, chat_id, "bot", bot)
        except Exception:
            log.exception("store failed")
    else:
        try:
            await store_message(r, chat_id, "bot", bot)
        except Exception as exc:
            log.exception("store failed")
            return fail(500, f"store failed: {exc}")

    return web.json_response({"ok": True, "bot": bot})


async def transcript(request: web.Request) -> web.Response:
    chat_id = get_chat_id(request)
    if chat_id is None:
        return web.json_response({"entries": []})
    try:
        entries = await load_transcript(request.app[REDIS_KEY], chat_id)
    except Exception as exc:
        log.exception("load failed")
        return fail(500, f"load failed: {exc}")
    return web.json_response({"entries": entries})


# ---------------------------------------------------------------- app


async def on_startup(app: web.Application) -> None:
    app[REDIS_KEY] = aioredis.from_url(REDIS_URL, decode_responses=True)
    log.info("redis=%s bugs=%s", REDIS_URL, sorted(BUGS) or "none")


async def on_cleanup(app: web.Application) -> None:
    await app[REDIS_KEY].aclose()


def make_app() -> web.Application:
    app = web.Application()
    app[TASKS_KEY] = set()
    app.on_startup.append(on_startup)
    app.on_cleanup.append(on_cleanup)
    app.router.add_get("/", index)
    app.router.add_post("/send", send)
    app.router.add_get("/transcript", transcript)
    return app


PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Chat</title>
<style>
 body{font-family:sans-serif;max-width:40em;margin:2em auto}
 #log div{margin:.3em 0;padding:.3em .6em;border-radius:6px}
 .me{background:#def;text-align:right} .bot{background:#eee}
 #err{color:#b00}
</style></head>
<body>
<h1>Chat</h1>
<div id="log"></div>
<form id="f"><input name="q" id="q" size="50" autocomplete="off" autofocus>
<button>Send</button></form>
<p id="err"></p>
<script>
const logEl = document.getElementById('log'), err = document.getElementById('err');
function add(author, body) {
  const d = document.createElement('div');
  d.className = author; d.textContent = body; logEl.appendChild(d);
}
async function loadHistory() {
  const r = await fetch('/transcript');
  const data = await r.json();
  logEl.textContent = '';
  (data.entries || []).slice().reverse().forEach(e => add(e.author, e.body));
}
document.getElementById('f').addEventListener('submit', async ev => {
  ev.preventDefault();
  const q = document.getElementById('q');
  const text = q.value.trim(); if (!text) return;
  err.textContent = ''; add('me', text); q.value = '';
  const r = await fetch('/send', {method: 'POST', body: new URLSearchParams({q: text})});
  const data = await r.json().catch(() => ({ok: false, error: 'bad response'}));
  if (data.ok) add('bot', data.bot); else err.textContent = data.error;
});
loadHistory();
</script>
</body></html>
"""

if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    web.run_app(make_app(), host="127.0.0.1", port=PORT)
