"""A user's own requests as the recorder reads them (lab.investigate.plugin.exchanges): a form's
POST answered 303 and the page after it 200 is a send answered (post/redirect/get), dated by the
303; a redirect whose next request failed, or that led elsewhere (a login page), is no answer; a refresh is the main frame's document
asked for again by GET -- not a send's redirect, a form's POST, a frame's load or a fetch."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from lab.investigate.plugin.exchanges import is_refresh, send_of
from lab.investigate.spec import parse as sp

ROOT = Path(__file__).resolve().parents[5]
PRG = sp.load(ROOT / "examples" / "node-prg.toml")  # a form POST to /c/{session}/say, answered 303
TIMING = {"startTime": 1_000_000.0, "responseStart": 5.0, "responseEnd": 6.0}


def _req(method: str = "GET", nav: bool = True, frame: object = None, before: Any = None, **kw: Any) -> Any:
    return SimpleNamespace(
        method=method, is_navigation_request=lambda: nav, frame=frame, redirected_from=before, redirected_to=None, **kw
    )


def _resp(req: Any, status: int, html: bool = True) -> Any:
    req.response = lambda: resp
    resp = SimpleNamespace(status=status, request=req, headers={"content-type": "text/html" if html else ""})
    return resp


def test_a_post_redirect_get_send_is_answered_by_the_page_it_led_to() -> None:
    post = _req("POST", post_data="text=hello+there", timing=TIMING, failure=None)
    page = _req("GET", before=post, url="http://127.0.0.1:1/c/0123456789abcdef")
    post.redirected_to = page
    answered = _resp(post, 303)
    _resp(page, 200)
    s = send_of(PRG, post, answered)
    assert (s.text, s.outcome, s.status, s.reason) == ("hello there", "ok", 200, "HTTP 303 -> 200")
    assert s.t_complete == 1000.005  # the 303's first byte: the app's answer
    _resp(page, 500)
    assert send_of(PRG, post, answered).outcome == "info"
    page.response = lambda: None  # the page's GET failed: no answer the user saw
    s = send_of(PRG, post, answered)
    assert s.outcome == "info" and "redirected to failed" in s.reason
    # Led to a login page, not the conversation: no answer to the send, whatever its status.
    login = _req("GET", before=post, url="http://127.0.0.1:1/login")
    post.redirected_to = login
    _resp(login, 200)
    s = send_of(PRG, post, answered)
    assert s.outcome == "info" and s.reason == "HTTP 303 -> 200 at /login, not the conversation's page", s


def test_a_refresh_is_the_main_frames_document_asked_for_again_by_get() -> None:
    main = object()
    to_chat = lambda r: r.method == "POST"  # noqa: E731
    send = _req("POST", frame=main)
    for r in (send, _req(frame=object()), _req(nav=False, frame=main), _req(frame=main, before=send)):
        assert not is_refresh(r, main, to_chat), r
    assert is_refresh(_req(frame=main), main, to_chat)
    assert is_refresh(_req(frame=main, before=_req(frame=main)), main, to_chat)  # a reload's own redirect
