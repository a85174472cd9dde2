"""HTTP API and page: GET /, POST /chat, GET /history, GET /healthz."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import redis.asyncio as aredis
from flask import Blueprint, Response, current_app, g, jsonify, request, send_from_directory

from services.chat import config, exercise, llm, profile, session
from services.chat.defects import Behaviour
from services.chat.errors import ApiError
from services.chat.store import STORE_ERRORS, Row

bp = Blueprint("chat", __name__)
log = logging.getLogger("chat")
_MESSAGE_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")


def event(name: str, **fields: object) -> None:
    """One JSON line per event: the lab reads these (receipt of message X, write failures)."""
    log.info(json.dumps({"event": name, "t": round(time.time(), 6), **fields}, default=str))


@bp.get("/")
def index() -> Response:
    return send_from_directory(current_app.static_folder or "static", "index.html")


@bp.get("/healthz")
def healthz() -> dict[str, object]:
    return {"status": "ok", "lab_mode": bool(current_app.config["LAB_MODE"])}


@bp.get("/history")
async def history() -> Response:
    prof = profile.from_request(request, current_app.config, exercise.step(current_app))
    b = prof.behaviour
    sid, _new = session.resolve(request.cookies.get(session.COOKIE))
    g.sid, g.behaviour = sid, b
    r, owned = b.client(current_app.config["REDIS_URL"], b.retry)
    try:
        rows = await _read(b, r, sid)
    finally:
        if owned:
            await r.aclose()
    return _with_session(jsonify([row.as_json() for row in rows]), sid, b)


def _parse_chat_body() -> tuple[str, str | None, bool]:
    if not request.is_json:
        raise ApiError(
            415, "unsupported_media_type", f"Content-Type must be application/json, got {request.mimetype or 'none'!r}"
        )
    body = request.get_json(silent=True)
    if body is None:
        raise ApiError(400, "bad_json", "the body is not valid JSON")
    if not isinstance(body, dict):
        raise ApiError(400, "bad_body", f"the body must be a JSON object, got {type(body).__name__}")
    message = body.get("message")
    if not isinstance(message, str) or not message.strip():
        raise ApiError(400, "bad_message", "'message' must be a non-empty string")
    limit = int(current_app.config["MAX_MESSAGE_BYTES"])
    if len(message.encode()) > limit:
        raise ApiError(413, "message_too_large", f"'message' is over {limit} bytes")
    mid = body.get("id")
    if mid is not None and not (isinstance(mid, str) and _MESSAGE_ID.match(mid)):
        raise ApiError(400, "bad_id", "'id' must be 1-64 characters of A-Z a-z 0-9 _ . : -")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise ApiError(400, "bad_stream", "'stream' must be true or false")
    return message, mid, stream


@bp.post("/chat")
async def chat() -> Response:
    prof = profile.from_request(request, current_app.config, exercise.step(current_app))
    b = prof.behaviour
    message, mid, stream = _parse_chat_body()
    mid = g.mid = mid or session.new_id()
    sid, _new = session.resolve(request.cookies.get(session.COOKIE))
    g.sid, g.behaviour = sid, b
    event(
        "chat.received",
        sid=sid,
        id=mid,
        trial=prof.trial,
        defects=sorted(prof.defects) + (["exercise"] if prof.exercise else []),
        stream=stream,
    )
    url = current_app.config["REDIS_URL"]
    r, owned = b.client(url, b.retry)
    outcome = "error"
    try:
        user = Row(mid, "user", message)
        streamed_at_end = stream and b.stream_save is not None
        if not streamed_at_end:
            await b.run_write(_store(b, r, sid, [user], prof.ttl_ms, "saving the message"))
        prior = [row for row in await _read(b, r, sid) if row.id != mid]  # the model's context
        reply = Row(mid, "assistant", await _answer(prior, message, prof.llm_latency_ms, prof.model_fake))
        if not streamed_at_end:
            await b.run_write(_store(b, r, sid, [reply], prof.ttl_ms, "saving the reply"))
        outcome = "replied"
    finally:
        if owned:
            await r.aclose()
        # Every received message ends with exactly one chat.done: the lab's quiescence signal.
        event("chat.done", sid=sid, id=mid, trial=prof.trial, outcome=outcome, stream=stream)
    head = {"id": mid, "session_id": sid}
    if not stream:
        return _with_session(jsonify({"reply": reply.content, **head}), sid, b)
    save: Callable[[], None] | None = None
    if streamed_at_end:

        def save() -> None:
            # Flask streams with a sync generator that runs after the view's loop has closed: a
            # new loop and a client for it are the only way to reach Redis from there.
            asyncio.run(_store_in_new_loop(b, url, sid, [user, reply], prof.ttl_ms))
            event("chat.saved_at_stream_end", sid=sid, id=user.id)

    body = _stream(head, reply.content, prof.token_delay_ms / 1000, b, sid, save)
    resp = Response(
        body, mimetype="application/x-ndjson", headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    )
    return _with_session(resp, sid, b)


async def _answer(prior: list[Row], message: str, latency_ms: int, fake: bool = False) -> str:
    """The model's reply: from the provider at CHAT_MODEL_URL where one is set (a failed call
    answers 502, the user's message already stored), else -- or where the request asks for it
    (``fake``) -- the in-process fake."""
    url = current_app.config["MODEL_URL"]
    if not url or fake:
        await llm.think(latency_ms)
        return llm.reply(prior, message)
    try:
        return await llm.ask(url, prior, message, float(current_app.config["MODEL_TIMEOUT_S"]))
    except llm.ModelFailed as exc:
        event("chat.model_failed", id=g.mid, sid=g.sid, error=str(exc))
        raise ApiError(502, "model_failed", f"the model failed: {exc}") from None


def _tokens(text: str, delay_s: float) -> Iterator[bytes]:
    for tok in llm.tokens(text):
        # Token pacing is the behaviour being modelled (a model emitting tokens), not a wait.
        time.sleep(delay_s)
        yield _line({"type": "token", "text": tok})


def _stream(
    head: dict[str, str], text: str, delay_s: float, b: Behaviour, sid: str, save: Callable[[], None] | None
) -> Iterator[bytes]:
    """NDJSON: a start line, one line per token, an end line. With ``save`` the stream stores
    the turn itself, as ``b.stream_save`` says (save_at_stream_end: after the last token)."""
    completed = False
    try:
        yield _line({"type": "start", **head})
        tokens = _tokens(text, delay_s)
        yield from (b.stream_save(tokens, save) if save is not None and b.stream_save else tokens)
        # Every token went out (and a save at the stream's end has run): a reload that cuts the
        # end line now cut nothing the app acts on -- a mid_stream trial that came this late
        # missed its window (seen in CI: the turn saved, the stream logged as not completed).
        completed = True
        yield _line({"type": "end", "reply": text})
    finally:
        # GeneratorExit lands here when the client went away mid-stream (the server's next
        # write failed): the lab waits for this event before reading Redis.
        event("chat.stream_closed", sid=sid, id=head["id"], completed=completed)


async def _store_in_new_loop(b: Behaviour, url: str, sid: str, rows: list[Row], ttl_ms: int) -> None:
    r, owned = b.client(url, b.retry)
    try:
        await _store(b, r, sid, rows, ttl_ms, "saving the streamed turn")
    finally:
        if owned:
            await r.aclose()


def _line(obj: dict[str, Any]) -> bytes:
    return (json.dumps(obj) + "\n").encode()


async def _store(b: Behaviour, r: aredis.Redis, sid: str, rows: list[Row], ttl_ms: int, what: str) -> None:
    try:
        await asyncio.wait_for(b.append(r, sid, rows, ttl_ms), config.STORE_OP_DEADLINE_S)
    except STORE_ERRORS as exc:  # TimeoutError (the deadline) is an OSError
        event("store.error", sid=sid, what=what, error=f"{type(exc).__name__}: {exc}")
        b.on_store_error(exc, what)


async def _read(b: Behaviour, r: aredis.Redis, sid: str) -> list[Row]:
    try:
        return await asyncio.wait_for(b.read(r, sid), config.STORE_OP_DEADLINE_S)
    except STORE_ERRORS as exc:
        event("store.error", sid=sid, what="reading the history", error=f"{type(exc).__name__}: {exc}")
        b.on_store_error(exc, "reading the history")
        return []


def _with_session(resp: Response, sid: str, b: Behaviour) -> Response:
    g.session_set = True
    b.set_cookie(resp, sid, int(current_app.config["COOKIE_MAX_AGE_S"]))
    return resp


@bp.before_app_request
def _started() -> None:
    g.t0 = time.time()


@bp.after_app_request
def _log_request(resp: Response) -> Response:
    """One ``http`` event per API request: the backend lane of the lab's trial timelines."""
    if request.path in ("/chat", "/history", "/"):
        t0 = g.get("t0", time.time())
        event(
            "http",
            method=request.method,
            path=request.path,
            status=resp.status_code,
            ms=round((time.time() - t0) * 1000, 1),
            t0=round(t0, 6),
            sid=g.get("sid") or request.cookies.get(session.COOKIE),
            **({"id": g.mid} if g.get("mid") else {}),
        )
    return resp


@bp.after_app_request
def _session_on_errors(resp: Response) -> Response:
    """An error answer still establishes the session it started, so the user's retry lands in
    the same conversation instead of a fresh one."""
    sid, b = g.get("sid"), g.get("behaviour")
    if sid and b is not None and not g.get("session_set"):
        _with_session(resp, sid, b)
    return resp
