"""session_cookie: the session cookie is set without Max-Age.

A cookie without Max-Age/Expires lives only as long as the browser session: after a browser
restart the user gets a new session id and an empty conversation.
"""

from __future__ import annotations

from dataclasses import replace

from flask import Response

from services.chat import session
from services.chat.defects import Behaviour, register


def set_session_cookie(resp: Response, sid: str, max_age_s: int) -> None:
    # The incident's line: no max_age (nor expires), so the browser forgets it when it closes.
    resp.set_cookie(session.COOKIE, sid, httponly=True, samesite="Lax", path="/")


@register("session_cookie", "the session cookie has no Max-Age")
def apply(b: Behaviour) -> Behaviour:
    return replace(b, set_cookie=set_session_cookie)
