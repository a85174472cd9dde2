"""A chat app written without the lab (a target of lab investigate: examples/flask-async.toml):
Flask 3's async views on gunicorn (1 worker x 8 threads), redis.asyncio, AsyncOpenAI. Flask runs
every `async def` view on its own short-lived event loop, so the Redis client is made and closed
inside each request. The conversation's id lives in Flask's signed session cookie (no Max-Age);
the history is `{"log": [["user", "..."], ["assistant", "..."]]}`, pairs as 2-element arrays.

APP_BUGS=global_client: one module-level client shared by every request's loop ("attached to a
different loop", "Event loop is closed": half the requests answer 500) -> errors_without_fault,
history_reads_failing, the client's line proven. APP_BUGS=swallow: a failed store logged, the
answer 200 -> acked_write_refused. APP_BUGS=expire_nx: EXPIRE ... NX, set once at the key's
creation, never renewed -> ttl_not_renewed (the key found by what it holds: its name has the id,
the cookie has it signed).
"""

import json
import logging
import os
import uuid

import redis.asyncio as aioredis
from flask import Flask, jsonify, request, session
from openai import AsyncOpenAI, OpenAIError
from redis.exceptions import RedisError

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
OPENAI_BASE_URL = os.environ.get("OPENAI_BASE_URL") or None  # the SDK's own default without it
OPENAI_API_KEY = os.environ.get("OPENAI_API_KEY", "sk-dev-not-a-real-key")
MODEL = os.environ.get("MODEL", "gpt-4o-mini")
SYSTEM_PROMPT = os.environ.get("SYSTEM_PROMPT", "You are a helpful assistant.")
HISTORY_TTL = 24 * 60 * 60  # one day, refreshed on every turn
MAX_MSG_LEN = 4000

# Deliberate, opt-in defects for testing (comma-separated names).
BUGS = {b.strip() for b in os.environ.get("APP_BUGS", "").split(",") if b.strip()}

app = Flask(__name__)
app.secret_key = os.environ.get("SECRET_KEY", "dev-secret-change-me-flask-async-chat")
app.logger.setLevel(logging.INFO)
if BUGS:
    app.logger.warning("APP_BUGS enabled: %s", ",".join(sorted(BUGS)))

# BUG global_client: one client for the whole process. Its connection pool
# keeps connections that belong to whichever event loop first used them.
_shared_redis = aioredis.Redis.from_url(REDIS_URL, decode_responses=True) if "global_client" in BUGS else None


def history_key(cid: str) -> str:
    return f"c:{cid}"


def get_redis():
    if _shared_redis is not None:
        return _shared_redis
    return aioredis.Redis.from_url(REDIS_URL, decode_responses=True)


async def release_redis(r) -> None:
    if r is not _shared_redis:
        await r.aclose()


async def load_history(r, cid: str) -> list[dict]:
    raw = await r.lrange(history_key(cid), 0, -1)
    turns = []
    for item in raw:
        try:
            turn = json.loads(item)
        except ValueError:
            app.logger.warning("skipping corrupt history entry in %s", history_key(cid))
            continue
        if isinstance(turn, dict) and turn.get("role") in ("user", "assistant"):
            turns.append({"role": turn["role"], "content": str(turn.get("content", ""))})
    return turns


async def store_turns(r, cid: str, user_msg: str, answer: str) -> None:
    key = history_key(cid)
    async with r.pipeline(transaction=True) as pipe:
        pipe.rpush(
            key, json.dumps({"role": "user", "content": user_msg}), json.dumps({"role": "assistant", "content": answer})
        )
        # BUG expire_nx: NX "so the TTL is not reset by every turn" -- it is then never renewed.
        pipe.expire(key, HISTORY_TTL, nx="expire_nx" in BUGS)
        await pipe.execute()


async def ask_model(history: list[dict], user_msg: str) -> str:
    messages = [{"role": "system", "content": SYSTEM_PROMPT}, *history, {"role": "user", "content": user_msg}]
    # Also per request: the httpx pool inside the client is loop-bound too.
    async with AsyncOpenAI(base_url=OPENAI_BASE_URL, api_key=OPENAI_API_KEY, timeout=60, max_retries=1) as client:
        resp = await client.chat.completions.create(model=MODEL, messages=messages)
    return (resp.choices[0].message.content or "").strip()


def error(status: int, message: str):
    return jsonify({"ok": False, "error": message}), status


@app.get("/")
def index():
    return PAGE, 200, {"Content-Type": "text/html; charset=utf-8"}


@app.post("/chat/say")
async def say():
    data = request.get_json(silent=True)
    msg = data.get("msg") if isinstance(data, dict) else None
    if not isinstance(msg, str) or not msg.strip():
        return error(400, 'expected JSON {"msg": "..."}')
    msg = msg.strip()
    if len(msg) > MAX_MSG_LEN:
        return error(413, "message too long")

    cid = session.get("cid")
    if not cid:
        cid = session["cid"] = uuid.uuid4().hex

    r = get_redis()
    try:
        try:
            history = await load_history(r, cid)
        except RedisError:
            app.logger.exception("history read failed for %s", cid)
            return error(503, "history store unavailable")

        try:
            answer = await ask_model(history, msg)
        except OpenAIError:
            app.logger.exception("model call failed")
            return error(502, "model unavailable")

        if BUGS & {"swallow", "global_client"}:
            # BUG swallow / global_client: "history is best effort"
            try:
                await store_turns(r, cid, msg, answer)
            except Exception:
                app.logger.exception("failed to save turn for %s", cid)
        else:
            try:
                await store_turns(r, cid, msg, answer)
            except RedisError:
                app.logger.exception("failed to save turn for %s", cid)
                return error(503, "could not save conversation, please retry")

        return jsonify({"ok": True, "answer": answer})
    finally:
        await release_redis(r)


@app.get("/chat/log")
async def chat_log():
    cid = session.get("cid")
    if not cid:
        return jsonify({"log": []})
    r = get_redis()
    try:
        history = await load_history(r, cid)
    except RedisError:
        app.logger.exception("history read failed for %s", cid)
        return error(503, "history store unavailable")
    finally:
        await release_redis(r)
    return jsonify({"log": [[t["role"], t["content"]] for t in history]})


PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Chat</title>
<style>
  body { font-family: system-ui, sans-serif; max-width: 46rem; margin: 2rem auto; padding: 0 1rem; }
  #log { border: 1px solid #ccc; border-radius: 6px; padding: .75rem; min-height: 12rem; }
  .turn { margin: .4rem 0; white-space: pre-wrap; }
  .user b { color: #2452a6; } .assistant b { color: #1b7a3a; }
  .err { color: #b00020; }
  form { display: flex; gap: .5rem; margin-top: .75rem; }
  textarea { flex: 1; min-height: 3rem; }
</style>
</head>
<body>
<h1>Chat</h1>
<div id="log"></div>
<form id="f">
  <textarea id="msg" placeholder="Say something (Enter to send, Shift+Enter for newline)"></textarea>
  <button id="send" type="submit">Send</button>
</form>
<p id="status" class="err"></p>
<script>
const logEl = document.getElementById('log');
const msgEl = document.getElementById('msg');
const sendEl = document.getElementById('send');
const statusEl = document.getElementById('status');

function add(role, text) {
  const div = document.createElement('div');
  div.className = 'turn ' + role;
  const who = document.createElement('b');
  who.textContent = role === 'user' ? 'You: ' : 'Assistant: ';
  div.appendChild(who);
  div.appendChild(document.createTextNode(text));
  logEl.appendChild(div);
  div.scrollIntoView({block: 'end'});
}

async function restore() {
  try {
    const res = await fetch('/chat/log');
    const data = await res.json();
    logEl.textContent = '';
    for (const [role, text] of (data.log || [])) add(role, text);
  } catch (e) {
    statusEl.textContent = 'Could not load history.';
  }
}

async function send(ev) {
  ev.preventDefault();
  const msg = msgEl.value.trim();
  if (!msg) return;
  sendEl.disabled = true;
  statusEl.textContent = '';
  add('user', msg);
  msgEl.value = '';
  try {
    const res = await fetch('/chat/say', {
      method: 'POST',
      headers: {'Content-Type': 'application/json'},
      body: JSON.stringify({msg}),
    });
    const data = await res.json().catch(() => ({}));
    if (res.ok && data.ok) add('assistant', data.answer);
    else statusEl.textContent = 'Error: ' + (data.error || res.status);
  } catch (e) {
    statusEl.textContent = 'Network error.';
  } finally {
    sendEl.disabled = false;
    msgEl.focus();
  }
}

document.getElementById('f').addEventListener('submit', send);
msgEl.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey) { e.preventDefault(); document.getElementById('f').requestSubmit(); }
});
restore();
</script>
</body>
</html>
"""
