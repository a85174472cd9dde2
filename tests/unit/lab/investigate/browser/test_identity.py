"""Which cookie is the conversation's: every cookie of the browser context by name and host,
whatever its Path, and whether that Path reaches the history route."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from lab.investigate.spec import parse as sp
from lab.investigate.browser.identity import cookie_scope, path_matches, sent_id, session_cookie

ROOT = Path(__file__).resolve().parents[5]
FOREIGN = sp.load(ROOT / "examples" / "foreign-app.toml")  # cookie "sid", POST /api/send, GET /api/messages


def _c(path: str, value: str = "v", name: str = "sid", domain: str = "127.0.0.1") -> dict[str, Any]:
    return {"name": name, "value": value, "domain": domain, "path": path, "expires": -1}


@pytest.mark.parametrize(
    "cookie_path, request_path, sent",
    [
        ("/", "/api/messages", True),
        ("/api", "/api/messages", True),
        ("/api/", "/api/messages", True),
        ("/api/send", "/api/send", True),
        ("/api/send", "/api/messages", False),
        ("/api/send", "/api/sender", False),  # a prefix that is not at a "/"
        ("/api/send", "/api/send/more", True),
        ("", "/anything", True),  # no Path: the default is taken as "/" here
    ],
)
def test_path_matches_as_rfc_6265_says(cookie_path: str, request_path: str, sent: bool) -> None:
    assert path_matches(cookie_path, request_path) is sent


def test_a_cookie_scoped_to_the_send_route_is_found_and_said_to_miss_the_history() -> None:
    c = session_cookie(FOREIGN, [_c("/api/send", "abc")])
    assert c is not None and c["value"] == "abc"
    scope = cookie_scope(FOREIGN, c)
    assert scope == {
        "name": "sid",
        "path": "/api/send",
        "history_path": "/api/messages",
        "covers_history": False,
        "covers_send": True,
    }
    assert cookie_scope(FOREIGN, _c("/"))["covers_history"] is True


def test_other_names_and_other_hosts_are_not_the_session() -> None:
    assert session_cookie(FOREIGN, [_c("/", name="theme"), _c("/", domain="example.com")]) is None
    assert session_cookie(FOREIGN, [_c("/", domain=".0.0.1")]) is not None  # a domain cookie for the host


def test_of_one_name_on_two_paths_the_send_routes_wins() -> None:
    got = session_cookie(FOREIGN, [_c("/", "root"), _c("/api/send", "send"), _c("/other", "other")])
    assert got is not None and got["value"] == "send"


@pytest.mark.parametrize(
    "sets, url, headers",
    [
        (['session.in="query"', 'session.name="thread"'], "http://h/api/send?thread=c-9", {}),
        (['session.in="header"', 'session.name="X-Conv"'], "http://h/api/send", {"x-conv": "c-9"}),
        (
            ['session.in="path"', 'chat.path="/api/{session}/send"', 'history.path="/api/{session}/messages"'],
            "http://h/api/c-9/send",
            {},
        ),
    ],
)
def test_the_id_a_users_own_request_carried_newest_first(sets: list[str], url: str, headers: dict[str, str]) -> None:
    spec = sp.load(
        ROOT / "examples" / "foreign-app.toml",
        [*sets, 'session.from="answer"', 'session.id="$.id"', 'session.page_storage="conv"'],
    )
    old = SimpleNamespace(url=url.replace("c-9", "c-1"), headers={k: "c-1" for k in headers}, post_data=None)
    new = SimpleNamespace(url=url, headers=headers, post_data=None)
    assert sent_id(spec, [new, old]) == "c-9"
    assert sent_id(spec, []) is None


def test_a_pages_id_is_read_by_its_page_url_or_else_by_the_chat_path_a_form_posted_to() -> None:
    """A form app answering a POST with the conversation itself leaves the page at the form's
    action (/c/<id>/say), not at /c/<id>: the id is read there by the chat path."""
    from lab.investigate.browser.identity import page_session
    from lab.investigate.spec import parse as sp

    spec = sp.load(Path(__file__).resolve().parents[5] / "examples" / "node-prg-page.toml")
    assert page_session(spec, "http://127.0.0.1:1/c/0123abcd/say") == "0123abcd"
    assert page_session(spec, "http://127.0.0.1:1/c/0123abcd") == "0123abcd"
    assert page_session(spec, "http://127.0.0.1:1/") is None
