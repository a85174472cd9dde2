"""Tutor: a small study-helper chat.

Run it (from this folder):

    REDIS_URL=redis://127.0.0.1:6379/0 SECRET_KEY=change-me \
        python -m gunicorn app:app -b 127.0.0.1:8000 --workers 1 --threads 4

Config (environment):
    REDIS_URL    where conversations live (default redis://127.0.0.1:6379/0)
    SECRET_KEY   signs the session cookie and CSRF tokens (dev default below)
    TUTOR_BUGS   comma-separated switches for known-bad code paths kept around
                 while we decide how to fix them for good; empty = normal app:
                   bg_save  - store the tutor's answer from a background thread
                   swallow  - log storage errors and answer anyway

Storage layout: one Redis LIST per conversation, ``tutor:{cid}:log``, each item
a JSON object {"from": "student"|"tutor", "text": ..., "ts": ...}, oldest
first. The key expires one hour after the last message.
"""

import json
import os
import re
import threading
import time
import uuid
from datetime import datetime, timedelta, timezone

import redis
from flask import Flask, jsonify, render_template, request, session
from flask_wtf.csrf import CSRFError, CSRFProtect

CONVERSATION_TTL = 60 * 60  # seconds; renewed on every message
MAX_QUESTION_LEN = 2000
THINKING_DELAY = 0.04  # the "model" takes a moment

app = Flask(__name__)
app.config.update(
    SECRET_KEY=os.environ.get("SECRET_KEY", "dev-only-not-secret"),
    SESSION_COOKIE_NAME="tutor_session",
    SESSION_COOKIE_SAMESITE="Lax",
    PERMANENT_SESSION_LIFETIME=timedelta(days=7),
)
csrf = CSRFProtect(app)

BUGS = {b.strip() for b in os.environ.get("TUTOR_BUGS", "").split(",") if b.strip()}

store = redis.Redis.from_url(
    os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"),
    decode_responses=True,
    socket_timeout=2,
    socket_connect_timeout=2,
)


# --- conversation storage -------------------------------------------------


def log_key(cid):
    return f"tutor:{cid}:log"


def load_history(cid):
    return [json.loads(item) for item in store.lrange(log_key(cid), 0, -1)]


def append_message(cid, entry):
    """Append one message and push the expiry out again."""
    key = log_key(cid)
    pipe = store.pipeline()  # MULTI/EXEC: both or neither
    pipe.rpush(key, json.dumps(entry))
    pipe.expire(key, CONVERSATION_TTL)
    pipe.execute()


def _append_in_background(cid, entry):
    try:
        append_message(cid, entry)
    except redis.RedisError as exc:
        app.logger.error("background save failed for %s: %s", cid, exc)


def make_entry(sender, text):
    ts = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
    return {"from": sender, "text": text, "ts": ts}


def conversation_id():
    """The visitor's conversation id, created on first use."""
    cid = session.get("cid")
    if not cid:
        cid = uuid.uuid4().hex
        session["cid"] = cid
    session.permanent = True
    return cid


# --- the tutor ------------------------------------------------------------

SUBJECTS = (
    "algebra",
    "geometry",
    "calculus",
    "statistics",
    "physics",
    "chemistry",
    "biology",
    "photosynthesis",
    "history",
    "grammar",
    "spanish",
    "french",
    "python",
    "economics",
)
_ABOUT = re.compile(r"\b(?:about|on|topic[: ]+)\s+([a-z][a-z\- ]{2,30}?)(?:[?.!,]|$)", re.I)


def find_topic(text):
    lowered = text.lower()
    for subject in SUBJECTS:
        if subject in lowered:
            return subject
    m = _ABOUT.search(text)
    return m.group(1).strip().lower() if m else None


def compose_answer(question, history):
    """A stand-in for the real model: looks at the question and what came before."""
    time.sleep(THINKING_DELAY)
    asked_before = [m["text"] for m in history if m.get("from") == "student"]
    number = len(asked_before) + 1

    topic = find_topic(question)
    earlier = None
    for text in reversed(asked_before):
        earlier = find_topic(text)
        if earlier:
            break

    if topic and earlier and topic != earlier:
        lead = f"Switching from {earlier} to {topic}."
    elif topic and earlier:
        lead = f"Still on {topic}, good."
    elif topic:
        lead = f"Let's look at {topic}."
    elif earlier:
        lead = f"Back to {earlier}, then."
    else:
        lead = "Good question."

    words = len(question.split())
    hint = "Try to say it in one sentence first." if words > 25 else "Break it into smaller steps and check each one."
    answer = f"{lead} That's question #{number} in this session. {hint}"
    return answer, number


# --- routes ---------------------------------------------------------------


@app.errorhandler(CSRFError)
def csrf_error(exc):
    return jsonify(error=exc.description), 400


def _storage_problem(exc, what, cid):
    """Decide what a Redis failure means for the request; None = carry on."""
    if "swallow" in BUGS:
        app.logger.warning("could not store %s for %s: %s", what, cid, exc)
        return None
    app.logger.error("redis error storing %s for %s: %s", what, cid, exc)
    return jsonify(error="Conversation storage is unavailable, try again shortly."), 503


@app.get("/")
def index():
    conversation_id()
    return render_template("index.html")


@app.get("/api/history")
def history():
    cid = conversation_id()
    try:
        return jsonify(load_history(cid))
    except redis.RedisError as exc:
        app.logger.error("redis error loading history for %s: %s", cid, exc)
        return jsonify(error="Conversation storage is unavailable, try again shortly."), 503


@app.post("/api/ask")
def ask():
    payload = request.get_json(silent=True) or {}
    question = payload.get("question")
    question = question.strip() if isinstance(question, str) else ""
    if not question:
        return jsonify(error="Please type a question."), 400
    if len(question) > MAX_QUESTION_LEN:
        return jsonify(error=f"Questions are limited to {MAX_QUESTION_LEN} characters."), 400

    cid = conversation_id()
    past = []
    try:
        past = load_history(cid)
        append_message(cid, make_entry("student", question))
    except redis.RedisError as exc:
        problem = _storage_problem(exc, "question", cid)
        if problem is not None:
            return problem

    answer, number = compose_answer(question, past)
    reply = make_entry("tutor", answer)

    if "bg_save" in BUGS:
        # don't make the student wait on the write
        threading.Thread(target=_append_in_background, args=(cid, reply), daemon=True).start()
    else:
        try:
            append_message(cid, reply)
        except redis.RedisError as exc:
            problem = _storage_problem(exc, "answer", cid)
            if problem is not None:
                return problem

    return jsonify(answer=answer, question_number=number, ts=reply["ts"])


@app.get("/healthz")
def healthz():
    return "ok", 200, {"Content-Type": "text/plain"}
