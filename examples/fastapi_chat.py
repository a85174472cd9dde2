"""A FastAPI chat backend with a login, bearer tokens, conversations by id and a streamed reply over
a WebSocket, to show the lab against an app shaped like today's LLM front ends. redis.asyncio (one
client, created in the lifespan, closed at shutdown); correct (every write one MULTI/EXEC with the
TTL renewal, awaited before it is acknowledged; a reply being streamed is stored even when the
client leaves mid-stream), so `lab investigate` should find nothing. /openapi.json describes it.
It serves its own chat page too (examples/fastapi_page.html), which a browser holding the login's
cookie uses as is: the lab can drive the app's own page, not only its API.

    REDIS_URL=redis://127.0.0.1:16380/0 PORT=18192 CHAT_USER=alice CHAT_PASSWORD=... \\
        python examples/fastapi_chat.py

The contract (the password and the tokens are never printed, unless FASTAPI_LOG_LOGINS=1 prints
every login's body and token -- a debug setting left on, against which the lab's redaction is tested):
  POST /api/login {"username", "password"} -> 200 {"token"} | 401 (the one CHAT_USER/CHAT_PASSWORD);
      the 200 also sets the cookie `chat_token` = the token (HttpOnly, SameSite=Lax, Path=/, a
      session cookie: no Max-Age)
  /api/conversations*: header `Authorization: Bearer <token>` or the cookie `chat_token` (the
      header first; OpenAPI shows the bearer scheme only), else 401; unknown ids -> 404
  POST /api/conversations -> 201 {"id"} (remembered in the process; no key until the first write)
  POST /api/conversations/{id}/messages {"content": 1..4000 chars} -> 200 {"reply": "Echo: ..."};
      key conv:{id}, a list of JSON rows {"role": "user"|"assistant", "content"}, oldest first (RPUSH)
  GET  /api/conversations/{id}/messages -> 200 {"messages": [...]}, oldest first
  WS   /api/conversations/{id}/ws?token=<token>, or without ?token= the handshake's `chat_token`
      cookie (closed 4401 / 4404 right after accept): the client
      sends {"type": "message", "content"}; the server stores the user's row, sends {"type": "ack"},
      streams the reply as 6 {"type": "delta", "text"} frames 40 ms apart, stores the reply's row,
      sends {"type": "done", "reply"}. A storage error: {"type": "error", "detail"}; the socket
      stays open. Every write: MULTI, RPUSH, EXPIRE 7 d, EXEC. Redis errors on HTTP -> 503.
  POST/GET /api/messages?conversation=<id>: the same two routes, the id in a query parameter
  header X-Api-Key: <CHAT_API_KEY> authenticates as well, where CHAT_API_KEY is set
  GET  /health -> 200 {"ok": true}
  GET  / and GET /c/{id} -> 200 the chat page, text/html, no auth (not in OpenAPI). Its DOM and its
      use of the API: the comment at the top of examples/fastapi_page.html

FASTAPI_STORE_ERRORS=close (correct, another style): a failed store on the socket closes it with
code 1011 instead of sending an error frame -- the page sees the reply end without its done frame.

FASTAPI_BUGS (comma-separated; empty = correct), one at a time or together:
  ttl_set_once        every EXPIRE with NX: the TTL is set by the conversation's first write and
                      never renewed, so an active conversation expires 7 days after it began
                      -> ttl_not_renewed
  save_at_stream_end  the turn generated inline in the socket handler and stored (the message and
                      its reply) only after its last delta went out: a client that closes the
                      socket mid-stream (a refresh) makes the next send raise WebSocketDisconnect,
                      the handler returns, and the message the user saw acknowledged is never
                      stored -> saved_at_stream_end
  save_after_done     the reply stored after its done frame went out, a failed store logged: the
                      user has the whole reply, which Redis may never get (Redis refusing that
                      write: the turn acknowledged, its reply gone) -> acked_write_refused
  memory_fallback     every row also kept in the process (a write-through copy, served first by
                      the history: "faster than Redis"), and a failed Redis write logged and
                      forgotten: the turn is answered 200 and shown from the process's copy while
                      Redis never got it -- until the app restarts or another worker answers
                      -> shown_not_stored
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

import redis
import redis.asyncio
import uvicorn
from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, Request, Response, WebSocket, WebSocketDisconnect
from fastapi.responses import HTMLResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field, ValidationError

_missing = [n for n in ("REDIS_URL", "PORT", "CHAT_USER", "CHAT_PASSWORD") if not os.environ.get(n)]
if _missing:
    raise SystemExit(f"fastapi_chat: set {', '.join(_missing)}")
REDIS_URL, PORT = os.environ["REDIS_URL"], int(os.environ["PORT"])
USER, PASSWORD = os.environ["CHAT_USER"].encode(), os.environ["CHAT_PASSWORD"].encode()

KNOWN_BUGS = {"ttl_set_once", "save_at_stream_end", "save_after_done", "memory_fallback"}
BUGS = {b.strip() for b in os.environ.get("FASTAPI_BUGS", "").split(",") if b.strip()}
if BUGS - KNOWN_BUGS:
    raise SystemExit(f"FASTAPI_BUGS: unknown {sorted(BUGS - KNOWN_BUGS)}; known: {sorted(KNOWN_BUGS)}")
# A debug setting left on, as happens: every login request and the token it got, printed to the
# log. The lab must keep both out of everything it writes (tests/e2e/test_investigate_shapes.py).
LOG_LOGINS = os.environ.get("FASTAPI_LOG_LOGINS") == "1"
API_KEY = os.environ.get("CHAT_API_KEY", "")  # optional: header X-Api-Key authenticates as well

TTL_S = 7 * 24 * 3600
PIECES = 6  # the stand-in for an LLM's tokens, each after a model's pause
PIECE_DELAY_S = int(os.environ.get("FASTAPI_PIECE_DELAY_MS", "40")) / 1000
CLOSE_ON_STORE_ERROR = os.environ.get("FASTAPI_STORE_ERRORS", "frame") == "close"


class StoreFailed(Exception):
    """A store on the socket failed, and the socket is to be closed (FASTAPI_STORE_ERRORS=close)."""


async def store_failed(send: Send) -> None:
    """A failed store told the page: an error frame, or (close) the socket closed by the handler."""
    if CLOSE_ON_STORE_ERROR:
        raise StoreFailed
    await send({"type": "error", "detail": "storage unavailable"})


STORAGE_ERRORS = (redis.RedisError, OSError)
COOKIE = "chat_token"  # the login's cookie: the same token as its answer's, for the page
PAGE = (Path(__file__).parent / "fastapi_page.html").read_text(encoding="utf-8")  # read once
log = logging.getLogger("fastapi_chat")

_tokens: set[str] = set()
_conversations: set[str] = set()
_turns: set[asyncio.Task[None]] = set()  # replies being generated: strong references until done
_redis: redis.asyncio.Redis | None = None


class LoginIn(BaseModel):
    username: str
    password: str


class TokenOut(BaseModel):
    token: str = Field(description="Send as `Authorization: Bearer <token>` (or ?token= on the WebSocket)")


class ConversationOut(BaseModel):
    id: str


class MessageIn(BaseModel):
    content: str = Field(min_length=1, max_length=4000)


class ReplyOut(BaseModel):
    reply: str


class Row(BaseModel):
    role: Literal["user", "assistant"]
    content: str


class HistoryOut(BaseModel):
    messages: list[Row] = Field(description="Oldest first")


class SocketMessageIn(MessageIn):
    type: Literal["message"]


@contextlib.asynccontextmanager
async def lifespan(_: FastAPI) -> AsyncIterator[None]:
    global _redis
    _redis = redis.asyncio.Redis.from_url(REDIS_URL, socket_timeout=5, socket_connect_timeout=3, retry=None)
    try:
        yield
    finally:
        if _turns:  # replies still being generated are stored before the client goes
            await asyncio.wait(_turns, timeout=5)
        await _redis.aclose()


def db() -> redis.asyncio.Redis:
    assert _redis is not None, "used outside the lifespan"
    return _redis


def _row(role: str, content: str) -> str:
    return json.dumps({"role": role, "content": content})


_copy: dict[str, list[str]] = {}  # memory_fallback: key -> every row this process wrote


async def append(key: str, *rows: str) -> None:
    """The rows and the TTL renewal in one MULTI/EXEC."""
    if "memory_fallback" in BUGS:
        _copy.setdefault(key, []).extend(rows)
        try:
            await _append(key, *rows)
        except redis.RedisError as exc:  # Bug: "the copy has it" -- Redis never will
            log.warning("redis write failed, kept in memory: %s", exc)
        return
    await _append(key, *rows)


async def _append(key: str, *rows: str) -> None:
    async with db().pipeline(transaction=True) as p:
        for row in rows:
            p.rpush(key, row)
        # Bug ttl_set_once: NX sets the TTL on the first write only; later writes leave it running.
        p.expire(key, TTL_S, nx="ttl_set_once" in BUGS)
        await p.execute()


@contextlib.contextmanager
def storage_or_503() -> Iterator[None]:
    try:
        yield
    except STORAGE_ERRORS as exc:
        raise HTTPException(503, "storage unavailable") from exc


bearer = HTTPBearer(auto_error=False)  # our own 401 (with its detail), not FastAPI's


def require_token(request: Request, creds: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> None:
    """The bearer header, else the login's cookie (read from the request: OpenAPI keeps showing
    the bearer scheme alone)."""
    key = request.headers.get("x-api-key", "")
    if API_KEY and secrets.compare_digest(key.encode(), API_KEY.encode()):
        return  # a service's static key (CHAT_API_KEY), as an API gateway would pass it
    token = creds.credentials if creds is not None else request.cookies.get(COOKIE)
    if token not in _tokens:
        raise HTTPException(401, "missing or unknown bearer token", headers={"WWW-Authenticate": "Bearer"})


def conversation_key(conv_id: str) -> str:
    if conv_id not in _conversations:
        raise HTTPException(404, "no such conversation")
    return f"conv:{conv_id}"


ConversationKey = Annotated[str, Depends(conversation_key)]
app = FastAPI(title="fastapi_chat", summary="Echo chat with streamed replies (a lab example)", lifespan=lifespan)
api = APIRouter(
    prefix="/api/conversations",
    tags=["conversations"],
    dependencies=[Depends(require_token)],
    responses={401: {"description": "Missing or unknown bearer token"}},
)
ON_ID: dict[int | str, dict[str, Any]] = {
    404: {"description": "No such conversation"},
    503: {"description": "Storage unavailable"},
}


@app.get("/health", summary="Liveness (no auth)")
async def health() -> dict[str, bool]:
    return {"ok": True}


@app.post(
    "/api/login",
    response_model=TokenOut,
    summary="Log in: a bearer token",
    tags=["auth"],
    responses={401: {"description": "Bad credentials"}},
)
async def login(body: LoginIn, response: Response) -> TokenOut:
    user_ok = secrets.compare_digest(body.username.encode(), USER)
    password_ok = secrets.compare_digest(body.password.encode(), PASSWORD)
    if not (user_ok and password_ok):
        raise HTTPException(401, "bad credentials")
    token = secrets.token_urlsafe(24)
    _tokens.add(token)
    if LOG_LOGINS:
        print(f"login {body.model_dump()} -> token {token}", flush=True)
    response.set_cookie(COOKIE, token, path="/", httponly=True, samesite="lax")  # no max_age: a session cookie
    return TokenOut(token=token)


@app.get("/", include_in_schema=False)
@app.get("/c/{conv_id}", include_in_schema=False)
async def chat_page() -> HTMLResponse:
    """The page itself needs no login: it reads the conversation with the browser's cookie."""
    return HTMLResponse(PAGE)


@api.post("", status_code=201, response_model=ConversationOut, summary="Start a conversation")
async def create_conversation() -> ConversationOut:
    conv_id = uuid.uuid4().hex
    _conversations.add(conv_id)
    return ConversationOut(id=conv_id)


@api.post(
    "/{conv_id}/messages", response_model=ReplyOut, summary="Send a message, get the whole reply", responses=ON_ID
)
async def send_message(body: MessageIn, key: ConversationKey) -> ReplyOut:
    reply = "Echo: " + body.content
    with storage_or_503():
        await append(key, _row("user", body.content), _row("assistant", reply))
    return ReplyOut(reply=reply)


@api.get("/{conv_id}/messages", response_model=HistoryOut, summary="The conversation, oldest first", responses=ON_ID)
async def history(key: ConversationKey) -> HistoryOut:
    with storage_or_503():
        rows = await read_rows(key)
    return HistoryOut(messages=[Row.model_validate_json(r) for r in rows])


async def read_rows(key: str) -> list[Any]:
    """A read is idempotent: retried once on a connection an outage broke (the client's own
    retries are off: a write retried blindly could be stored twice)."""
    if "memory_fallback" in BUGS and key in _copy:
        return list(_copy[key])  # Bug: the process's copy, not what Redis holds
    try:
        return list(await db().lrange(key, 0, -1))
    except (redis.ConnectionError, redis.TimeoutError):
        return list(await db().lrange(key, 0, -1))


app.include_router(api)

Send = Callable[[dict[str, Any]], Awaitable[None]]


# The same routes with the conversation's id in a query parameter (?conversation=<id>), as some
# APIs take it; not in OpenAPI, which keeps describing the path form.
@app.post("/api/messages", dependencies=[Depends(require_token)], include_in_schema=False)
async def send_by_query(body: MessageIn, conversation: Annotated[str, Query()]) -> ReplyOut:
    return await send_message(body, conversation_key(conversation))


@app.get("/api/messages", dependencies=[Depends(require_token)], include_in_schema=False)
async def history_by_query(conversation: Annotated[str, Query()]) -> HistoryOut:
    return await history(conversation_key(conversation))


def pieces(text: str) -> list[str]:
    """PIECES roughly equal parts ("Echo: " + at least one character: none is empty)."""
    cuts = [len(text) * i // PIECES for i in range(PIECES + 1)]
    return [text[a:b] for a, b in zip(cuts, cuts[1:])]


async def turn(send: Send, key: str, content: str, at_end: bool = False) -> None:
    """One message on the socket: store it, ack, stream the reply, store the reply, done
    (``at_end``: ack, stream, then store both)."""
    try:
        if not at_end:
            await append(key, _row("user", content))
    except STORAGE_ERRORS:
        await store_failed(send)
        return
    await send({"type": "ack"})
    reply = "Echo: " + content
    for piece in pieces(reply):
        await asyncio.sleep(PIECE_DELAY_S)
        await send({"type": "delta", "text": piece})
    if "save_after_done" in BUGS:
        # Bug: done first (the user has the reply), then the store; its error only logged.
        await send({"type": "done", "reply": reply})
        try:
            await append(key, _row("assistant", reply))
        except STORAGE_ERRORS as exc:
            log.warning("storing the reply failed: %r", exc)
        return
    try:
        await append(key, *([_row("user", content)] if at_end else []), _row("assistant", reply))
    except STORAGE_ERRORS:
        await store_failed(send)
        return
    await send({"type": "done", "reply": reply})


class Listener:
    """Sends to the socket until the first failure (the client left); then the turn goes on unheard."""

    def __init__(self, ws: WebSocket) -> None:
        self.ws, self.gone = ws, False

    async def send(self, frame: dict[str, Any]) -> None:
        if self.gone:
            return
        try:
            await self.ws.send_json(frame)
        except WebSocketDisconnect:  # starlette's wrapper of uvicorn's ClientDisconnected (an OSError)
            self.gone = True


def _turn_done(task: asyncio.Task[None]) -> None:
    _turns.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.error("reply task failed: %r", task.exception())


async def turn_in_task(listener: Listener, key: str, content: str) -> None:
    """The turn in a task of its own, which the socket's end does not cancel (shield)."""
    task = asyncio.create_task(turn(listener.send, key, content))
    _turns.add(task)
    task.add_done_callback(_turn_done)
    await asyncio.shield(task)


async def next_message(ws: WebSocket) -> str | None:
    """The next valid message's content; None for a frame that is not one (answered with an error)."""
    text = await ws.receive_text()  # WebSocketDisconnect when the client has gone
    try:
        return SocketMessageIn.model_validate_json(text).content
    except ValidationError:
        await ws.send_json({"type": "error", "detail": 'expected {"type": "message", "content": "..."}'})
        return None


@app.websocket("/api/conversations/{conv_id}/ws", name="conversation_stream")
async def conversation_stream(ws: WebSocket, conv_id: str, token: Annotated[str, Query()] = "") -> None:
    await ws.accept()  # first: a close before it reaches a browser as HTTP 403, without the code
    token = token or ws.cookies.get(COOKIE, "")  # no ?token=: the login's cookie (the app's page)
    if token not in _tokens:
        await ws.close(code=4401, reason="missing or unknown token")
        return
    if conv_id not in _conversations:
        await ws.close(code=4404, reason="no such conversation")
        return
    key, listener = f"conv:{conv_id}", Listener(ws)
    with contextlib.suppress(WebSocketDisconnect):
        while True:
            content = await next_message(ws)
            if content is None:
                continue
            if "save_at_stream_end" in BUGS:
                # Bug: the turn generated in the handler itself and stored whole at its end; a send
                # to a closed socket raises WebSocketDisconnect, the handler ends, and neither row
                # is ever written.
                await turn(ws.send_json, key, content, at_end=True)
            else:
                try:
                    await turn_in_task(listener, key, content)
                except StoreFailed:
                    await ws.close(code=1011, reason="storage unavailable")
                    return
            if listener.gone:
                return


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
