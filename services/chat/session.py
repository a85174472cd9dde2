"""The session id: taken from the cookie only when well-formed, so it can never become an
arbitrary Redis key; otherwise a new one is started."""

from __future__ import annotations

import re
import uuid

from flask import Response

COOKIE = "session_id"
_VALID = re.compile(r"^[0-9a-f]{32}$")


def valid(value: str | None) -> bool:
    return bool(value and _VALID.match(value))


def new_id() -> str:
    return uuid.uuid4().hex


def resolve(cookie_value: str | None) -> tuple[str, bool]:
    """(session id, whether it is new)."""
    if cookie_value is not None and valid(cookie_value):
        return cookie_value, False
    return new_id(), True


def key(session_id: str) -> str:
    """The Redis list holding the conversation, oldest first."""
    return f"chat:{session_id}"


def ids_key(session_id: str) -> str:
    """The set of row ids already stored (makes appends idempotent)."""
    return f"chat:{session_id}:ids"


def set_persistent(resp: Response, sid: str, max_age_s: int) -> None:
    """Correct: the session cookie has a Max-Age, so it outlives a browser restart."""
    resp.set_cookie(COOKIE, sid, max_age=max_age_s, httponly=True, samesite="Lax", path="/")
