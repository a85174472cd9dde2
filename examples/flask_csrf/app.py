"""Small server-rendered chat demo: Flask + Redis, post/redirect/get, hand-rolled CSRF."""

import hmac
import json
import logging
import os
import random
import secrets
import threading
import time
import uuid
from datetime import datetime, timezone

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from flask import Flask, redirect, render_template, request, session, url_for

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("chat")

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
SECRET_KEY = os.environ.get("SECRET_KEY", "dev-secret-change-me")
BUGS = {b.strip() for b in os.environ.get("FLASK_BUGS", "").split(",") if b.strip()}

HISTORY_LIMIT = 200
HISTORY_TTL = 2 * 60 * 60  # seconds
MAX_MESSAGE_LEN = 4000

CANNED_REPLIES = [
    "Interesting question! Let me think about that.",
    "I'm not sure, but here's a guess: it depends on the context.",
    "Could you tell me a bit more about what you're trying to do?",
    "Sure - that sounds reasonable to me.",
    "Good point. There are a few ways to look at it.",
]

app = Flask(__name__)
app.config["SECRET_KEY"] = SECRET_KEY
app.config["SESSION_COOKIE_SAMESITE"] = "Lax"

# One client per worker process: gunicorn imports this module in each worker
# (no --preload), and the client only connects lazily on first use.
# Library-level retries are switched off; errors surface to the views.
if "retry_push" in BUGS:
    store = redis.Redis.from_url(REDIS_URL, socket_timeout=0.2, socket_connect_timeout=0.2, retry=Retry(NoBackoff(), 0))
else:
    store = redis.Redis.from_url(REDIS_URL, retry=Retry(NoBackoff(), 0))

if BUGS:
    log.warning("FLASK_BUGS enabled: %s", ",".join(sorted(BUGS)))


def hist_key(conv_id):
    return f"hist:{conv_id}"


def make_entry(author, text):
    return json.dumps({"author": author, "text": text, "ts": time.time()})


def fake_model(prompt):
    time.sleep(0.1)  # pretend to think
    return random.choice(CANNED_REPLIES)


def save_turn(conv_id, entries):
    """Push entries (oldest first) so the list stays newest-first, trim, renew TTL."""
    key = hist_key(conv_id)
    with store.pipeline(transaction=True) as pipe:
        for e in entries:
            pipe.lpush(key, e)
        pipe.ltrim(key, 0, HISTORY_LIMIT - 1)
        pipe.expire(key, HISTORY_TTL)
        pipe.execute()


def save_turn_with_retry(conv_id, entries):
    key = hist_key(conv_id)
    last_err = None
    for attempt in range(1, 4):
        try:
            store.lpush(key, *entries)
            store.ltrim(key, 0, HISTORY_LIMIT - 1)
            store.expire(key, HISTORY_TTL)
            return
        except redis.RedisError as e:
            last_err = e
            log.warning("save attempt %d/3 for %s failed: %s: %s", attempt, conv_id, type(e).__name__, e)
    raise last_err


def save_in_background(conv_id, entries):
    try:
        save_turn(conv_id, entries)
    except Exception:
        log.exception("background save failed for conversation %s", conv_id)


def ensure_session():
    if "conv_id" not in session:
        session["conv_id"] = uuid.uuid4().hex
    if "csrf_token" not in session:
        session["csrf_token"] = secrets.token_urlsafe(32)


def error_page(status, title, detail):
    return render_template("error.html", status=status, title=title, detail=detail), status


@app.template_filter("hhmm")
def hhmm(ts):
    return datetime.fromtimestamp(float(ts), tz=timezone.utc).strftime("%H:%M")


@app.template_filter("isotime")
def isotime(ts):
    return datetime.fromtimestamp(float(ts), tz=timezone.utc).isoformat(timespec="seconds")


@app.get("/")
def index():
    ensure_session()
    try:
        raw = store.lrange(hist_key(session["conv_id"]), 0, HISTORY_LIMIT - 1)
    except redis.RedisError:
        log.exception("could not load history for %s", session["conv_id"])
        return error_page(503, "Service unavailable", "The chat history store is not reachable. Try again shortly.")
    messages = []
    for item in raw:
        try:
            messages.append(json.loads(item))
        except ValueError:
            log.warning("skipping malformed history entry in %s", session["conv_id"])
    return render_template("index.html", messages=messages, csrf_token=session["csrf_token"])


@app.post("/send")
def send():
    expected = session.get("csrf_token")
    sent = request.form.get("csrf_token", "")
    if not expected or not sent or not hmac.compare_digest(expected, sent):
        log.info("rejected POST /send: bad or missing CSRF token")
        return error_page(
            400, "Bad request", "Your form expired or was not sent from this site. Reload the page and try again."
        )

    ensure_session()
    conv_id = session["conv_id"]
    text = request.form.get("message", "").strip()
    if not text:
        return redirect(url_for("index"), code=303)
    if len(text) > MAX_MESSAGE_LEN:
        return error_page(400, "Bad request", f"Messages are limited to {MAX_MESSAGE_LEN} characters.")

    user_entry = make_entry("human", text)
    reply_entry = make_entry("assistant", fake_model(text))
    entries = [user_entry, reply_entry]

    if "late_save" in BUGS:
        threading.Thread(target=save_in_background, args=(conv_id, entries), daemon=True).start()
        return redirect(url_for("index"), code=303)

    try:
        if "retry_push" in BUGS:
            save_turn_with_retry(conv_id, entries)
        else:
            save_turn(conv_id, entries)
    except redis.RedisError:
        log.exception("could not save turn for %s", conv_id)
        return error_page(503, "Service unavailable", "Your message could not be saved. Please try again.")
    return redirect(url_for("index"), code=303)


if __name__ == "__main__":
    app.run(host="127.0.0.1", port=int(os.environ.get("PORT", "8000")))
