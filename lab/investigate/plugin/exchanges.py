"""What one of the user's own requests says, for the recorder (lab.investigate.plugin.recorder):
a chat POST and its answer as a send, the answer a redirect led to, and whether a request is a
refresh. Sync Playwright objects (pytest-playwright's API), read once the test is over."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs

from playwright.sync_api import Error as PlaywrightError, Request, Response

from lab.investigate.evidence.answers import led_elsewhere
from lab.investigate.evidence.rows import json_path
from lab.investigate.spec.parse import Spec
from lab.model.history import Send


def send_of(spec: Spec, req: Request, resp: Response | None) -> Send:
    """The chat POST ``req`` and its answer ``resp`` (None: the request failed) as a send:
    ok (2xx, after a redirect only to the conversation's page), fail (4xx), info (5xx, no
    answer, a redirect elsewhere). Dated by the answer's first byte, its status then known."""
    field = spec.chat.message_field
    try:
        if spec.chat.body == "form":
            text = parse_qs(req.post_data or "").get(field, [""])[0]
        else:
            text = str(json.loads(req.post_data or "{}").get(field, ""))
    except (ValueError, AttributeError):
        text = req.post_data or ""
    timing = req.timing
    start = timing["startTime"] / 1000 if timing.get("startTime", -1) > 0 else time.time()
    ms = timing["responseStart"] if timing.get("responseStart", -1) >= 0 else None
    end = start + timing["responseEnd"] / 1000 if timing.get("responseEnd", -1) >= 0 else time.time()
    s = Send("", text, 0, ms=ms, t_invoke=start)
    if resp is None:
        s.complete("info", None, req.failure or "the request failed", end)
        return s
    # The answer came with its first byte (a send's outcome, as the lab's own page logs it: a
    # stream's with its first chunk), not with its body's end: a user's test that awaits
    # fetch() has its status then and may send the next message before that body is in --
    # measured 2026-12-04, answers' bodies 40 ms behind their headers on gunicorn, and turns
    # the next send carried counted as not yet acknowledged.
    answered = start + ms / 1000 if ms is not None else end
    final = after_redirects(resp)
    if final is None:
        s.complete("info", resp.status, f"HTTP {resp.status}, and the request it redirected to failed", answered)
        return s
    status = final.status
    said = f"HTTP {status}" if final is resp else f"HTTP {resp.status} -> {status}"
    if final is not resp and (where := led_elsewhere(spec, final.request.url)) is not None:
        s.complete("info", status, f"{said} at {where}, not the conversation's page", answered)
        return s
    if 200 <= status < 300:
        s.reply = _reply(spec, final)
        s.complete("ok", status, said, answered)
    else:
        s.html = "text/html" in (final.headers.get("content-type") or "")
        s.complete("fail" if 400 <= status < 500 else "info", status, said, answered)
    return s


def after_redirects(resp: Response) -> Response | None:
    """The answer a redirect led to: a form's POST answered 303 and the page's GET after it
    answered 200 (post/redirect/get: the user is shown the conversation, the send answered), as
    the browser followed it; None where a request of the chain failed."""
    req = resp.request
    while 300 <= resp.status < 400 and req.redirected_to is not None:
        req = req.redirected_to
        got = req.response()
        if got is None:
            return None
        resp = got
    return resp


def is_refresh(req: Request, main_frame: Any, to_chat: Callable[[Request], bool]) -> bool:
    """Whether ``req`` is a refresh: the page's document asked for again -- a GET navigation of
    its main frame, not one a send's redirect led to (post/redirect/get: the page the send
    answered with). Dated by its request, not by the navigation's commit: a server-rendered
    history is that document, answered before the commit; a pushState asks for nothing."""
    if req.method != "GET" or not req.is_navigation_request() or req.frame != main_frame:
        return False
    first = req
    while first.redirected_from is not None:
        first = first.redirected_from
    return not to_chat(first)


def _reply(spec: Spec, resp: Response) -> str | None:
    if not spec.chat.reply_path or spec.stream is not None:
        return None
    try:  # the body may be gone with a page the test reloaded at once: the reply unknown
        return str(json_path(json.loads(resp.text()), spec.chat.reply_path))
    except (PlaywrightError, ValueError, KeyError):
        return None
