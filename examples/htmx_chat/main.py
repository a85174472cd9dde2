"""Small chat page: FastAPI + Jinja2 + htmx, conversation kept in Redis.

The page is rendered on the server; htmx only appends the new pair of
bubbles returned by POST /messages.
"""

import asyncio
import hashlib
import json
import logging
import os
import random
import secrets
import time
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import parse_qs

import redis.asyncio as aioredis
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError

log = logging.getLogger("htmx_chat")

BASE = Path(__file__).resolve().parent
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
PORT = int(os.environ.get("PORT", "8000"))
BUGS = {b.strip() for b in os.environ.get("HTMX_BUGS", "").split(",") if b.strip()}
# A variation (added beside the app as written): many htmx apps answer a failed save 200, since
# htmx swaps in only 2xx answers -- the error fragment then shows where the turn would have.
ERROR_STATUS = int(os.environ.get("HTMX_ERROR_STATUS", "503"))
LOG_TTL = 3600  # seconds
COOKIE = "sid"

CANNED = [
    "Good question. The short answer is: it depends on your setup.",
    "I'd start by checking the logs, that usually tells you most of it.",
    "Sure! Could you give me a bit more detail about what you tried?",
    "That sounds right to me. Let me know if anything breaks.",
    "Hmm, I am not sure. Try restarting it and see if it happens again.",
    "Thanks for asking! Most people run into that at some point.",
]


async def fake_model(prompt: str) -> str:
    """Pretend to think for a moment, then pick a canned answer."""
    await asyncio.sleep(random.uniform(0.05, 0.15))
    digest = hashlib.sha1(prompt.strip().lower().encode()).digest()
    return CANNED[digest[0] % len(CANNED)]


def log_key(sid: str) -> str:
    return f"chat:{sid}:log"


@asynccontextmanager
async def lifespan(app: FastAPI):
    app.state.redis = aioredis.from_url(
        REDIS_URL,
        decode_responses=True,
        socket_timeout=2,
        socket_connect_timeout=2,
        # one quick retry so a pooled connection left over from a Redis
        # restart does not turn the next request into a 503
        retry=Retry(NoBackoff(), 1),
        retry_on_error=[RedisConnectionError],
    )
    if BUGS:
        log.warning("HTMX_BUGS enabled: %s", ", ".join(sorted(BUGS)))
    try:
        yield
    finally:
        await app.state.redis.aclose()


app = FastAPI(lifespan=lifespan)
app.mount("/static", StaticFiles(directory=BASE / "static"), name="static")
templates = Jinja2Templates(directory=BASE / "templates")


async def save_turn(r: aioredis.Redis, sid: str, user_text: str, bot_text: str) -> None:
    now = time.time()
    entries = [
        json.dumps({"from": "me", "text": user_text, "ts": now}),
        json.dumps({"from": "bot", "text": bot_text, "ts": now}),
    ]
    key = log_key(sid)
    length = await r.rpush(key, *entries)
    if "ttl_first_only" in BUGS:
        if length <= 2:
            await r.expire(key, LOG_TTL)
    else:
        await r.expire(key, LOG_TTL)


async def load_log(r: aioredis.Redis, sid: str) -> list[dict]:
    raw = await r.lrange(log_key(sid), 0, -1)
    out = []
    for item in raw:
        try:
            out.append(json.loads(item))
        except ValueError:
            log.warning("skipping bad log entry for %s", sid)
    return out


@app.get("/", response_class=HTMLResponse)
async def index(request: Request):
    sid = request.cookies.get(COOKIE)
    new_sid = sid is None
    if new_sid:
        sid = secrets.token_urlsafe(18)
    try:
        messages = await load_log(request.app.state.redis, sid)
    except RedisError:
        log.exception("could not load conversation")
        return templates.TemplateResponse(
            request, "error_page.html", {"detail": "The chat store is unavailable."}, status_code=503
        )
    resp = templates.TemplateResponse(request, "index.html", {"messages": messages})
    if new_sid:
        resp.set_cookie(COOKIE, sid, httponly=True, samesite="lax", max_age=LOG_TTL * 24)
    return resp


@app.post("/messages", response_class=HTMLResponse)
async def post_message(request: Request):
    # htmx posts application/x-www-form-urlencoded; parsed by hand so the app
    # does not need python-multipart.
    body = (await request.body()).decode("utf-8", errors="replace")
    text = parse_qs(body).get("prompt", [""])[0].strip()
    if not text:
        return templates.TemplateResponse(
            request, "_error.html", {"detail": "Please type a message first."}, status_code=422
        )
    sid = request.cookies.get(COOKIE)
    new_sid = sid is None
    if new_sid:
        sid = secrets.token_urlsafe(18)

    reply = await fake_model(text)
    r = request.app.state.redis

    if "fire_and_forget" in BUGS:
        asyncio.create_task(save_turn(r, sid, text, reply))  # noqa: RUF006 -- the HTMX_BUGS=fire_and_forget defect, on purpose
    else:
        try:
            await save_turn(r, sid, text, reply)
        except RedisError:
            log.exception("could not save turn")
            return templates.TemplateResponse(
                request,
                "_error.html",
                {"detail": "Sorry, your message could not be saved. Please try again."},
                status_code=ERROR_STATUS,
            )

    resp = templates.TemplateResponse(
        request, "_turn.html", {"messages": [{"from": "me", "text": text}, {"from": "bot", "text": reply}]}
    )
    if new_sid:
        resp.set_cookie(COOKIE, sid, httponly=True, samesite="lax", max_age=LOG_TTL * 24)
    return resp


if __name__ == "__main__":
    import uvicorn

    logging.basicConfig(level=logging.INFO)
    uvicorn.run(app, host="127.0.0.1", port=PORT)
