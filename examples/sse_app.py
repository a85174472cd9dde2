"""A chat app written without the lab (a target of lab init's tests): Flask's sync views on
gunicorn, redis-py, the `openai` SDK streaming. The first send has no id: the stream's first event
(`event: meta`, data {"conversation": id}) gives it, and the page sends it back as `?c=` (its
script builds the URL with a conditional); replies as `data: {"delta"}` lines ending in
`event: done` (or `event: oops`); the history newest first; a Redis List a conversation, the
question stored before the model is called.

APP_BUGS=generator_finally: the reply stored in the stream generator's `finally`, errors
swallowed -- a partial reply stored as whole when the client leaves mid-stream. APP_BUGS=late_expire:
the EXPIRE only with the first push -> ttl_not_renewed.
"""

import json
import logging
import os
import re
import uuid

import openai
import redis
from flask import Flask, Response, jsonify, request

# ---------------------------------------------------------------- config

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
MODEL = os.environ.get("MODEL", "gpt-4o-mini")
SYSTEM_PROMPT = os.environ.get("SYSTEM_PROMPT", "You are a helpful assistant.")

KEY_TTL_SECONDS = 2 * 24 * 3600  # conversations live 2 days after the last write
MAX_INPUT_CHARS = 8000
CONTEXT_ENTRIES = 50  # how many past entries the model gets to see

# Deliberate faults, only when named: APP_BUGS=generator_finally,late_expire
BUGS = {b.strip() for b in os.environ.get("APP_BUGS", "").split(",") if b.strip()}

CONVERSATION_ID = re.compile(r"^[0-9a-f]{32}$")

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("flask_sse")

app = Flask(__name__)

# Both clients are lazy: nothing connects until the first request, so they are
# safe to build at import time even if gunicorn forks after importing us.
store = redis.Redis.from_url(REDIS_URL, decode_responses=True, socket_timeout=5, socket_connect_timeout=5)
llm = openai.OpenAI(
    # base_url / api_key come from OPENAI_BASE_URL / OPENAI_API_KEY
    api_key=os.environ.get("OPENAI_API_KEY", "not-needed"),
    timeout=60.0,
    max_retries=1,
)

if BUGS:
    log.warning("APP_BUGS enabled: %s", ", ".join(sorted(BUGS)))


# ---------------------------------------------------------------- storage


def conversation_key(conversation_id):
    return f"talk:{conversation_id}"


def load_entries(conversation_id, limit=None):
    """Entries oldest first."""
    key = conversation_key(conversation_id)
    start = -limit if limit else 0
    raw = store.lrange(key, start, -1)
    entries = []
    for item in raw:
        try:
            entry = json.loads(item)
        except ValueError:
            log.warning("skipping unreadable entry in %s", key)
            continue
        if isinstance(entry, dict) and "speaker" in entry and "message" in entry:
            entries.append({"speaker": entry["speaker"], "message": entry["message"]})
    return entries


def append_entry(conversation_id, speaker, message):
    key = conversation_key(conversation_id)
    value = json.dumps({"speaker": speaker, "message": message})
    if "late_expire" in BUGS:
        length = store.rpush(key, value)
        if length == 1:  # set the lifetime when the conversation starts
            store.expire(key, KEY_TTL_SECONDS)
        return
    pipe = store.pipeline(transaction=True)
    pipe.rpush(key, value)
    pipe.expire(key, KEY_TTL_SECONDS)
    pipe.execute()


# ---------------------------------------------------------------- SSE helpers


def sse(data, event=None):
    out = ""
    if event:
        out += f"event: {event}\n"
    out += f"data: {json.dumps(data)}\n\n"
    return out


def to_model_messages(entries, new_input):
    messages = [{"role": "system", "content": SYSTEM_PROMPT}]
    for e in entries:
        role = "user" if e["speaker"] == "human" else "assistant"
        messages.append({"role": role, "content": e["message"]})
    messages.append({"role": "user", "content": new_input})
    return messages


def model_deltas(messages):
    """Yield text pieces from a streaming chat completion.

    The stream is used as a context manager so that if our caller stops early
    (client went away) the upstream HTTP response is closed too.
    """
    with llm.chat.completions.create(model=MODEL, messages=messages, stream=True) as stream:
        for chunk in stream:
            if not chunk.choices:
                continue
            piece = chunk.choices[0].delta.content
            if piece:
                yield piece


# ---------------------------------------------------------------- the turn


def relay_reply(conversation_id, messages):
    """Stream the model's answer, then store it. Correct version.

    The reply is stored only after the model stream finished on its own. If
    the client disconnects, the WSGI server closes this generator (GeneratorExit
    at a yield) and nothing after the loop runs, so no partial reply is saved.
    """
    parts = []
    try:
        for piece in model_deltas(messages):
            parts.append(piece)
            yield sse({"delta": piece})
    except openai.OpenAIError as exc:
        log.warning("model call failed for %s: %s", conversation_id, exc)
        yield sse({"why": "the model failed to answer"}, event="oops")
        return

    try:
        append_entry(conversation_id, "ai", "".join(parts))
    except redis.RedisError as exc:
        log.warning("could not store reply for %s: %s", conversation_id, exc)
        yield sse({"why": "could not store the reply"}, event="oops")
        return
    yield sse({}, event="done")


def relay_reply_finally(conversation_id, messages):
    """Variant used with APP_BUGS=generator_finally: 'always save what we got'."""
    parts = []
    model_failed = False
    stored = False
    try:
        try:
            for piece in model_deltas(messages):
                parts.append(piece)
                yield sse({"delta": piece})
        except openai.OpenAIError as exc:
            log.warning("model call failed for %s: %s", conversation_id, exc)
            model_failed = True
    finally:
        if not model_failed:
            try:
                append_entry(conversation_id, "ai", "".join(parts))
                stored = True
            except Exception:
                pass

    if model_failed:
        yield sse({"why": "the model failed to answer"}, event="oops")
    elif not stored:
        yield sse({"why": "could not store the reply"}, event="oops")
    else:
        yield sse({}, event="done")


def run_turn(conversation_id, user_input):
    yield sse({"conversation": conversation_id}, event="meta")

    try:
        history = load_entries(conversation_id, limit=CONTEXT_ENTRIES)
        # Store the question before calling the model, so a model failure keeps it.
        append_entry(conversation_id, "human", user_input)
    except redis.RedisError as exc:
        log.warning("could not store question for %s: %s", conversation_id, exc)
        yield sse({"why": "could not store your message"}, event="oops")
        return

    messages = to_model_messages(history, user_input)
    if "generator_finally" in BUGS:
        yield from relay_reply_finally(conversation_id, messages)
    else:
        yield from relay_reply(conversation_id, messages)


# ---------------------------------------------------------------- routes


def bad_request(why):
    return jsonify({"error": why}), 400


@app.post("/talk")
def talk():
    conversation_id = request.args.get("c")
    if conversation_id is None or conversation_id == "":
        conversation_id = uuid.uuid4().hex
    elif not CONVERSATION_ID.match(conversation_id):
        return bad_request("bad conversation id")

    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        return bad_request("expected a JSON object")
    user_input = body.get("input")
    if not isinstance(user_input, str) or not user_input.strip():
        return bad_request("'input' must be a non-empty string")
    if len(user_input) > MAX_INPUT_CHARS:
        return bad_request(f"'input' is longer than {MAX_INPUT_CHARS} characters")

    return Response(
        run_turn(conversation_id, user_input),
        mimetype="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


@app.get("/talk/history")
def history():
    conversation_id = request.args.get("c", "")
    if not CONVERSATION_ID.match(conversation_id):
        return bad_request("missing or bad conversation id")
    try:
        entries = load_entries(conversation_id)
    except redis.RedisError as exc:
        log.warning("could not read history for %s: %s", conversation_id, exc)
        return jsonify({"error": "storage unavailable"}), 503
    entries.reverse()  # newest first
    return jsonify({"conversation": conversation_id, "entries": entries})


@app.get("/")
def index():
    return Response(PAGE, mimetype="text/html")


PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Talk</title>
<style>
  body { font-family: system-ui, sans-serif; max-width: 46rem; margin: 2rem auto; padding: 0 1rem; }
  #log { display: flex; flex-direction: column; gap: .5rem; margin-bottom: 1rem; }
  .msg { padding: .5rem .75rem; border-radius: .5rem; white-space: pre-wrap; }
  .human { background: #e6f0ff; align-self: flex-end; }
  .ai { background: #f2f2f2; align-self: flex-start; }
  .err { color: #a00; font-size: .9rem; }
  form { display: flex; gap: .5rem; }
  textarea { flex: 1; min-height: 3rem; font: inherit; }
  #status { color: #777; font-size: .85rem; min-height: 1.2em; }
</style>
</head>
<body>
<h1>Talk</h1>
<div id="log"></div>
<div id="status"></div>
<form id="form">
  <textarea id="input" placeholder="Say something..." required></textarea>
  <button id="send" type="submit">Send</button>
</form>
<script>
const KEY = "talk.conversation";
const log = document.getElementById("log");
const form = document.getElementById("form");
const input = document.getElementById("input");
const sendBtn = document.getElementById("send");
const statusEl = document.getElementById("status");

function addMessage(speaker, text) {
  const div = document.createElement("div");
  div.className = "msg " + (speaker === "human" ? "human" : "ai");
  div.textContent = text;
  log.appendChild(div);
  div.scrollIntoView({block: "end"});
  return div;
}

function showError(text) {
  const div = document.createElement("div");
  div.className = "err";
  div.textContent = text;
  log.appendChild(div);
}

async function restore() {
  const id = sessionStorage.getItem(KEY);
  if (!id) return;
  try {
    const res = await fetch("/talk/history?c=" + encodeURIComponent(id));
    if (!res.ok) throw new Error("HTTP " + res.status);
    const data = await res.json();
    // the server lists newest first; show oldest at the top
    for (const e of data.entries.slice().reverse()) addMessage(e.speaker, e.message);
  } catch (err) {
    statusEl.textContent = "Could not load the conversation: " + err.message;
  }
}

function parseBlock(block) {
  let event = "message";
  const data = [];
  for (const line of block.split(/\\r?\\n/)) {
    if (line.startsWith("event:")) event = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
  }
  if (!data.length) return null;
  return {event, data: JSON.parse(data.join("\\n"))};
}

async function send(text) {
  const id = sessionStorage.getItem(KEY);
  const url = id ? "/talk?c=" + encodeURIComponent(id) : "/talk";
  addMessage("human", text);
  const aiDiv = addMessage("ai", "");
  statusEl.textContent = "...";

  const res = await fetch(url, {
    method: "POST",
    headers: {"Content-Type": "application/json"},
    body: JSON.stringify({input: text}),
  });
  if (!res.ok) {
    let why = "HTTP " + res.status;
    try { why = (await res.json()).error || why; } catch (e) {}
    throw new Error(why);
  }

  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  let finished = false;
  while (true) {
    const {value, done} = await reader.read();
    if (done) break;
    buf += decoder.decode(value, {stream: true});
    let m;
    while ((m = buf.match(/\\r?\\n\\r?\\n/))) {
      const block = buf.slice(0, m.index);
      buf = buf.slice(m.index + m[0].length);
      const ev = parseBlock(block);
      if (!ev) continue;
      if (ev.event === "meta") {
        if (ev.data.conversation) sessionStorage.setItem(KEY, ev.data.conversation);
      } else if (ev.event === "message") {
        aiDiv.textContent += ev.data.delta || "";
      } else if (ev.event === "done") {
        finished = true;
      } else if (ev.event === "oops") {
        finished = true;
        showError("Problem: " + (ev.data.why || "unknown"));
      }
    }
  }
  if (!finished) showError("The answer was cut off.");
  if (!aiDiv.textContent) aiDiv.remove();
}

form.addEventListener("submit", async (e) => {
  e.preventDefault();
  const text = input.value.trim();
  if (!text) return;
  input.value = "";
  sendBtn.disabled = true;
  try {
    await send(text);
    statusEl.textContent = "";
  } catch (err) {
    statusEl.textContent = "Send failed: " + err.message;
  } finally {
    sendBtn.disabled = false;
    input.focus();
  }
});

input.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); form.requestSubmit(); }
});

restore();
</script>
</body>
</html>
"""
