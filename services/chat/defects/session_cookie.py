"""session_cookie: the session cookie is set without Max-Age.

A cookie without Max-Age/Expires lives only as long as the browser session: after a browser
restart the user gets a new session id and an empty conversation.
"""

from __future__ import annotations

from dataclasses import replace

from services.chat.defects import Behaviour, register


@register("session_cookie", "the session cookie has no Max-Age")
def apply(b: Behaviour) -> Behaviour:
    return replace(b, cookie_max_age=False)
