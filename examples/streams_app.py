"""A chat app on Flask's sync views (gunicorn, 2 workers x 4 threads), the `anthropic` SDK's
Messages API and one Redis Stream per conversation (XADD, read back with XRANGE; its EXPIRE
renewed in the exchange's MULTI). Written apart from the lab, in its own style: the page keeps the
conversation's id in localStorage and calls the API through a helper of its own
(``api(method, path, payload)``); no cookie; routes POST /api/conversations, GET and POST
/api/conversations/<id>/turns {"prompt"} -> {"completion"}.

A failed store answers 503 {"error": {...}} -- or, with STORE_ERROR_STYLE=apology, 200 with an
apology in the completion's place and nothing else in the JSON saying so (correct too: the user
is told, in words). APP_BUGS (comma-separated):
- thread_save: the view answers first and stores the exchange in a daemon thread whose
  exception is only printed -> acked_write_refused (write_refused), stored_after_answer;
- expire_once: the EXPIRE set at the conversation's creation only -> ttl_not_renewed.
The exchange is stored once the model has answered: a model error leaves the message unstored
(lost_after_model_error, a design the lab names).
"""

import os
import re
import sys
import threading
import time
import traceback
import uuid

import anthropic
import redis
from flask import Flask, jsonify, request

# --------------------------------------------------------------------------
# configuration
# --------------------------------------------------------------------------

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
MODEL_NAME = os.environ.get("MODEL_NAME", "claude-sonnet-4-5")
MAX_TOKENS = 512
CONVERSATION_TTL = 6 * 60 * 60  # seconds; renewed on every write
MAX_PROMPT_CHARS = 8000

STORE_ERROR_STYLE = os.environ.get("STORE_ERROR_STYLE", "status").strip().lower()
APOLOGY_TEXT = "Sorry -- I couldn't save our conversation just now. Please try again."

APP_BUGS = {flag.strip() for flag in os.environ.get("APP_BUGS", "").split(",") if flag.strip()}
BUG_THREAD_SAVE = "thread_save" in APP_BUGS
BUG_EXPIRE_ONCE = "expire_once" in APP_BUGS

CONV_ID_RE = re.compile(r"^[0-9a-f]{32}$")

app = Flask(__name__)

store = redis.Redis.from_url(REDIS_URL, decode_responses=True, socket_timeout=5, socket_connect_timeout=5)

# Reads ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL from the environment.
llm = anthropic.Anthropic(timeout=60.0, max_retries=1)

if APP_BUGS:
    print(f"[flask_streams] APP_BUGS enabled: {sorted(APP_BUGS)}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


def log_key(conv_id: str) -> str:
    return f"conv:{conv_id}:log"


def now_ts() -> str:
    return f"{time.time():.3f}"


def error_response(status: int, code: str, detail: str):
    resp = jsonify({"error": {"code": code, "detail": detail}})
    resp.status_code = status
    return resp


def load_turns(conv_id: str):
    """Return the stored turns (oldest first) or None if the conversation is unknown."""
    entries = store.xrange(log_key(conv_id), "-", "+")
    if not entries:
        return None
    turns = []
    for entry_id, fields in entries:
        if fields.get("kind") != "turn":
            continue
        turns.append(
            {
                "id": entry_id,
                "role": fields.get("role", ""),
                "text": fields.get("text", ""),
                "ts": float(fields.get("ts", "0") or 0),
            }
        )
    return turns


def save_exchange(conv_id: str, prompt: str, answer: str) -> None:
    """Append the user turn and the assistant turn atomically and renew the TTL."""
    key = log_key(conv_id)
    pipe = store.pipeline(transaction=True)
    pipe.xadd(key, {"kind": "turn", "role": "user", "text": prompt, "ts": now_ts()})
    pipe.xadd(key, {"kind": "turn", "role": "assistant", "text": answer, "ts": now_ts()})
    if not BUG_EXPIRE_ONCE:
        pipe.expire(key, CONVERSATION_TTL)
    pipe.execute()


def save_exchange_in_background(conv_id: str, prompt: str, answer: str) -> None:
    try:
        save_exchange(conv_id, prompt, answer)
    except Exception:  # noqa: BLE001 - background worker, nowhere to report to
        print(f"[flask_streams] background save failed for {conv_id}:", file=sys.stderr)
        traceback.print_exc(file=sys.stderr)
        sys.stderr.flush()


def ask_model(turns, prompt: str) -> str:
    messages = [{"role": t["role"], "content": t["text"]} for t in turns]
    messages.append({"role": "user", "content": prompt})
    result = llm.messages.create(model=MODEL_NAME, max_tokens=MAX_TOKENS, messages=messages)
    parts = [block.text for block in result.content if getattr(block, "type", None) == "text"]
    return "".join(parts).strip()


# --------------------------------------------------------------------------
# routes
# --------------------------------------------------------------------------


@app.post("/api/conversations")
def open_conversation():
    conv_id = uuid.uuid4().hex
    key = log_key(conv_id)
    try:
        pipe = store.pipeline(transaction=True)
        pipe.xadd(key, {"kind": "opened", "ts": now_ts()})
        pipe.expire(key, CONVERSATION_TTL)
        pipe.execute()
    except redis.RedisError as exc:
        app.logger.warning("could not create conversation: %s", exc)
        return error_response(503, "store_unavailable", "Could not create the conversation. Please try again.")
    resp = jsonify({"conversation_id": conv_id, "turns": []})
    resp.status_code = 201
    return resp


@app.get("/api/conversations/<conv_id>/turns")
def list_turns(conv_id):
    if not CONV_ID_RE.match(conv_id):
        return error_response(404, "unknown_conversation", "No such conversation.")
    try:
        turns = load_turns(conv_id)
    except redis.RedisError as exc:
        app.logger.warning("could not read conversation %s: %s", conv_id, exc)
        return error_response(503, "store_unavailable", "Could not read the conversation. Please try again.")
    if turns is None:
        return error_response(404, "unknown_conversation", "No such conversation.")
    return jsonify({"conversation_id": conv_id, "turns": turns})


@app.post("/api/conversations/<conv_id>/turns")
def add_turn(conv_id):
    if not CONV_ID_RE.match(conv_id):
        return error_response(404, "unknown_conversation", "No such conversation.")

    body = request.get_json(silent=True)
    if not isinstance(body, dict) or not isinstance(body.get("prompt"), str):
        return error_response(400, "bad_request", 'Expected a JSON object like {"prompt": "..."}.')
    prompt = body["prompt"].strip()
    if not prompt:
        return error_response(400, "bad_request", "The prompt is empty.")
    if len(prompt) > MAX_PROMPT_CHARS:
        return error_response(413, "prompt_too_long", f"Prompts are limited to {MAX_PROMPT_CHARS} characters.")

    try:
        turns = load_turns(conv_id)
    except redis.RedisError as exc:
        app.logger.warning("could not read conversation %s: %s", conv_id, exc)
        return error_response(503, "store_unavailable", "Could not read the conversation. Please try again.")
    if turns is None:
        return error_response(404, "unknown_conversation", "No such conversation.")

    try:
        answer = ask_model(turns, prompt)
    except anthropic.APIError as exc:
        app.logger.warning("model call failed for %s: %s", conv_id, exc)
        return error_response(502, "model_unavailable", "The assistant is unavailable right now. Please try again.")

    if BUG_THREAD_SAVE:
        worker = threading.Thread(target=save_exchange_in_background, args=(conv_id, prompt, answer), daemon=True)
        worker.start()
        return jsonify({"conversation_id": conv_id, "completion": answer})

    try:
        save_exchange(conv_id, prompt, answer)
    except redis.RedisError as exc:
        app.logger.warning("could not store turns for %s: %s", conv_id, exc)
        if STORE_ERROR_STYLE == "apology":
            return jsonify({"conversation_id": conv_id, "completion": APOLOGY_TEXT})
        return error_response(503, "store_unavailable", "The reply could not be saved. Please try again.")

    return jsonify({"conversation_id": conv_id, "completion": answer})


@app.get("/")
def index():
    return PAGE_HTML, 200, {"Content-Type": "text/html; charset=utf-8"}


PAGE_HTML = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Streams Chat</title>
<style>
  body { font-family: system-ui, sans-serif; max-width: 720px; margin: 2rem auto; padding: 0 1rem; color: #222; }
  header { display: flex; justify-content: space-between; align-items: center; }
  #log { border: 1px solid #ddd; border-radius: 8px; padding: 1rem; min-height: 300px; margin: 1rem 0; overflow-y: auto; max-height: 60vh; }
  .turn { margin: .5rem 0; padding: .5rem .75rem; border-radius: 6px; white-space: pre-wrap; }
  .user { background: #e8f0fe; margin-left: 15%; }
  .assistant { background: #f3f3f3; margin-right: 15%; }
  .pending { color: #888; font-style: italic; }
  #status { color: #b00020; min-height: 1.2em; }
  form { display: flex; gap: .5rem; }
  textarea { flex: 1; font: inherit; padding: .5rem; min-height: 3em; }
  button { font: inherit; padding: .5rem 1rem; }
</style>
</head>
<body>
<header>
  <h1>Streams Chat</h1>
  <button id="fresh" type="button">New conversation</button>
</header>
<div id="log" aria-live="polite"></div>
<div id="status" role="alert"></div>
<form id="composer">
  <textarea id="prompt" placeholder="Type a message..." required></textarea>
  <button id="send" type="submit">Send</button>
</form>
<script>
(function () {
  var STORAGE_KEY = "flask_streams.conversation_id";
  var logEl = document.getElementById("log");
  var statusEl = document.getElementById("status");
  var promptEl = document.getElementById("prompt");
  var sendBtn = document.getElementById("send");
  var convId = localStorage.getItem(STORAGE_KEY);

  function showError(text) { statusEl.textContent = text || ""; }

  function addTurn(role, text, extraClass) {
    var div = document.createElement("div");
    div.className = "turn " + role + (extraClass ? " " + extraClass : "");
    div.textContent = text;
    logEl.appendChild(div);
    logEl.scrollTop = logEl.scrollHeight;
    return div;
  }

  function api(method, path, payload) {
    var opts = { method: method, credentials: "omit", headers: { "Accept": "application/json" } };
    if (payload !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(payload);
    }
    return fetch(path, opts).then(function (res) {
      return res.json().catch(function () { return {}; }).then(function (data) {
        if (!res.ok) {
          var msg = (data && data.error && data.error.detail) || ("Request failed (HTTP " + res.status + ")");
          var err = new Error(msg);
          err.status = res.status;
          throw err;
        }
        return data;
      });
    });
  }

  function createConversation() {
    return api("POST", "/api/conversations").then(function (data) {
      convId = data.conversation_id;
      localStorage.setItem(STORAGE_KEY, convId);
      logEl.innerHTML = "";
      return data;
    });
  }

  function restore() {
    if (!convId) { return createConversation(); }
    return api("GET", "/api/conversations/" + encodeURIComponent(convId) + "/turns")
      .then(function (data) {
        logEl.innerHTML = "";
        data.turns.forEach(function (t) { addTurn(t.role, t.text); });
      })
      .catch(function (err) {
        if (err.status === 404) { return createConversation(); }
        throw err;
      });
  }

  document.getElementById("composer").addEventListener("submit", function (ev) {
    ev.preventDefault();
    var text = promptEl.value.trim();
    if (!text || !convId) { return; }
    showError("");
    sendBtn.disabled = true;
    var mine = addTurn("user", text);
    var pending = addTurn("assistant", "Thinking...", "pending");
    api("POST", "/api/conversations/" + encodeURIComponent(convId) + "/turns", { prompt: text })
      .then(function (data) {
        pending.classList.remove("pending");
        pending.textContent = data.completion;
        promptEl.value = "";
      })
      .catch(function (err) {
        pending.remove();
        mine.remove();
        showError(err.message);
      })
      .finally(function () { sendBtn.disabled = false; promptEl.focus(); });
  });

  promptEl.addEventListener("keydown", function (ev) {
    if (ev.key === "Enter" && !ev.shiftKey) {
      ev.preventDefault();
      document.getElementById("composer").requestSubmit();
    }
  });

  document.getElementById("fresh").addEventListener("click", function () {
    showError("");
    createConversation().catch(function (err) { showError(err.message); });
  });

  restore().catch(function (err) { showError(err.message); });
})();
</script>
</body>
</html>
"""
