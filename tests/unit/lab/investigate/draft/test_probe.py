"""lab init's probe logs in with the values of the draft's {env:NAME} body: those values and the
token the login returns are secrets from then on (its redaction scope scrubs them); a login the
app refuses, or values not set, are named in the draft and nothing is sent."""

from __future__ import annotations

from typing import Any

import pytest

from lab.common import redact
from lab.investigate.draft.client import Client
from lab.investigate.draft.infer import Draft
from lab.investigate.draft.probe import _login

ENV = {"LAB_LOGIN_USERNAME": "ada-lovelace", "LAB_LOGIN_PASSWORD": "pw-0123456789"}


class FakeClient:
    """The app's login: 200 with a token, or the status given."""

    form = False  # bodies as JSON (Client.form)
    hidden: dict[str, str] = {}  # no page's hidden inputs (Client.hidden)

    def __init__(self, status: int = 200) -> None:
        self.status, self.headers, self.sent = status, {}, []  # type: ignore[var-annotated]

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, str, Any]:
        self.sent.append((method, path, body))
        return self.status, "application/json", {"token": "tok-abcdef123"} if self.status == 200 else None


pytestmark = pytest.mark.usefixtures("fresh_secrets")


def _draft() -> Draft:
    d = Draft()
    d.put("auth", "login", "/api/login", "")
    d.put("auth", "body", {"username": "{env:LAB_LOGIN_USERNAME}", "password": "{env:LAB_LOGIN_PASSWORD}"}, "")
    d.put("auth", "token", "$.token", "")
    return d


def test_the_login_values_and_its_token_become_secrets() -> None:
    c = FakeClient()
    assert _login(c, _draft(), ENV.get)  # type: ignore[arg-type]
    assert c.sent == [("POST", "/api/login", {"username": "ada-lovelace", "password": "pw-0123456789"})]
    assert c.headers == {"Authorization": "Bearer tok-abcdef123"}
    assert redact.known() == {"ada-lovelace", "pw-0123456789", "tok-abcdef123"}


def test_a_refused_login_keeps_its_values_secret_all_the_same() -> None:
    d = _draft()
    assert not _login(FakeClient(401), d, ENV.get)  # type: ignore[arg-type]
    assert d.unknown == {"auth.body": "a login that works: POST /api/login answered 401 with the values given"}
    assert redact.known() == {"ada-lovelace", "pw-0123456789"}


def test_values_not_set_are_named_and_nothing_is_sent() -> None:
    c, d = FakeClient(), _draft()
    assert not _login(c, d, {}.get)  # type: ignore[arg-type]
    assert c.sent == [] and redact.known() == frozenset()
    assert "set LAB_LOGIN_USERNAME and LAB_LOGIN_PASSWORD" in d.unknown["auth.body"]


def test_a_streamed_answer_s_first_event_naming_the_conversation_is_its_answer() -> None:
    from lab.investigate.draft.probe import _stream_doc

    body = 'event: meta\ndata: {"conversation": "ab12cd34"}\n\ndata: {"delta": "Hi"}\n\nevent: done\ndata: {}\n\n'
    assert _stream_doc(body) == {"conversation": "ab12cd34"}
    assert _stream_doc('data: {"delta": "Hi"}\n\nevent: done\ndata: {}\n\n') is None


def test_a_key_not_named_after_the_session_is_drafted_from_two_messages() -> None:
    """The id in Flask's signed cookie (sid "eyJj..." is not in the key c:3f2a...): the one key
    holding a second message too, its id as `*`. A key a message (msg:{uuid} beside an index)
    holds only one of them: not drafted, and the note says why."""
    from lab.investigate.draft.session import key as _key

    held = {"first": ["c:3f2a9c0e", "recent:all"], "second": ["c:3f2a9c0e"]}
    d = _draft()
    _key(d, "first", "eyJjaWQiOiIzZjJh", held.__getitem__, lambda k: 86_400_000, again=lambda: "second")
    assert d.get("redis", "key") == "c:*" and not d.notes

    one_each = {"first": ["msg:0b1c2d3e4f"], "second": ["msg:9a8b7c6d5e"]}
    d = _draft()
    _key(d, "first", "sid123", one_each.__getitem__, lambda k: -1, again=lambda: "second")
    assert d.get("redis", "key") is None and "no one of them holds a second message" in d.notes[0]


class FormApp(Client):
    """A chat route that reads a form (aiohttp's request.post()): a JSON body reads as no field.
    Its 400 is no CSRF refusal: it gave no token, so none is tried."""

    def __init__(self) -> None:
        super().__init__("http://127.0.0.1:9")

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, str, Any]:
        if path != "/send":
            return 404, "text/plain", None
        if not self.form:
            return 400, "application/json", {"ok": False, "error": "empty message"}
        return 200, "application/json", {"ok": True, "bot": "You said something about probe."}


def test_a_route_that_refuses_json_and_takes_a_form_is_drafted_so() -> None:
    from lab.investigate.draft.probe import _send
    from lab.investigate.draft.routes import calls_in

    c, d = FormApp(), Draft()
    page = calls_in("fetch('/send', {method: 'POST', body: new URLSearchParams({q: text})});")
    got = _send(c, d, "chaoslab init probe 1a2b", None, page)  # type: ignore[arg-type]
    assert got is not None and c.form
    assert (d.get("chat", "body"), d.get("chat", "path"), d.get("chat", "message_field")) == ("form", "/send", "q")


def test_a_create_call_and_a_login_whose_answers_openapi_does_not_describe() -> None:
    """FastAPI views returning dicts (no response_model): the create call's {"id": 1} (an INCR
    counter's) and the login's access_token, read from the answers themselves."""
    from lab.investigate.draft.probe import _create

    class App(FakeClient):
        def call(self, method: str, path: str, body: Any = None) -> tuple[int, str, Any]:
            self.sent.append((method, path, body))
            return 200, "application/json", {"id": 1} if path == "/api/conversations" else {"access_token": "t-9f8e"}

    c, d = App(), Draft()
    d.put("auth", "login", "/auth/login", "")
    d.put("auth", "body", {"username": "{env:LAB_LOGIN_USERNAME}", "password": "{env:LAB_LOGIN_PASSWORD}"}, "")
    assert _login(c, d, ENV.get)  # type: ignore[arg-type]
    assert d.get("auth", "token") == "$.access_token" and c.headers["Authorization"] == "Bearer t-9f8e"
    d.put("session", "create", "/api/conversations", "")
    assert _create(c, d) == "1" and d.get("session", "id") == "$.id"  # type: ignore[arg-type]


class CsrfApp(Client):
    """Django's CSRF check: a POST without the csrftoken cookie's value in X-CSRFToken is 403."""

    def __init__(self) -> None:
        super().__init__("http://127.0.0.1:9")
        self.seen: list[str | None] = []

    def cookies(self) -> dict[str, str]:
        return {"csrftoken": "tok%2F9", "sessionid": "s1"}

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, str, Any]:
        if path != "/chat/api/send/":
            return 404, "text/html", None
        token = "tok/9" if self.csrf == ("csrftoken", "X-CSRFToken") else None  # as Client would send it
        self.seen.append(token)
        return (200, "application/json", {"answer": "Hm."}) if token else (403, "text/html", None)


class MetaApp(Client):
    """A Rails-like page: the token in <meta name="csrf-token">, sent by its script in
    X-CSRF-Token; without it the POST is refused 422. The page is a conversation's own."""

    def __init__(self, refused: int = 422) -> None:
        super().__init__("http://127.0.0.1:9")
        self.metas = {"csrf-param": "authenticity_token", "csrf-token": "Zm9v+/=="}
        self.metas_at, self.refused = "/c/8f3a9b2c41", refused
        self.seen: list[tuple[str, str] | None] = []

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, str, Any]:
        if path != "/messages":
            return 404, "text/html", None
        self.seen.append(self.csrf_meta)
        if self.csrf_meta == ("csrf-token", "X-CSRF-Token"):
            return 200, "application/json", {"reply": "Noted."}
        return self.refused, "application/json", {"error": "InvalidAuthenticityToken"}


def test_a_token_in_a_meta_tag_is_sent_in_the_header_the_app_takes() -> None:
    from lab.investigate.draft.probe import _send
    from lab.investigate.draft.routes import calls_in

    for refused in (400, 403, 419, 422):  # Flask-WTF, gorilla/csurf, Laravel, Rails
        c, d = MetaApp(refused), Draft()
        page = calls_in("fetch('/messages', {method: 'POST', body: JSON.stringify({body: m})});")
        assert _send(c, d, "chaoslab init probe 1a2b", None, page) is not None  # type: ignore[arg-type]
        assert (d.get("http", "csrf_meta"), d.get("http", "csrf_header")) == ("csrf-token", "X-CSRF-Token")
        assert d.get("chat", "hidden_from") == "/c/{session}"  # where the token is read, ids as {session}
        assert c.seen == [None, ("csrf-token", "X-CSRF-Token")]  # csrf-param names a field, not a token


def test_the_header_the_pages_script_names_is_tried_first() -> None:
    """Flask-WTF takes X-CSRFToken and X-CSRF-Token alike: the draft names the one the page sends."""
    c = Client("http://127.0.0.1:9")
    c.metas = {"csrf-token": "t1"}
    script = "fetch('/api/ask', {method: 'POST', headers: {'X-CSRFToken': meta.content}})"
    assert next(c.csrf_ways([script])) == ("meta", "csrf-token", "X-CSRFToken")


def test_the_ways_a_page_sends_its_token_are_tried_in_turn_and_reset_after_the_last() -> None:
    c = Client("http://127.0.0.1:9")
    c.metas = {"_csrf": "t1", "_csrf_header": "X-SPRING-CSRF", "viewport": "width=device-width"}
    ways = list(c.csrf_ways())
    # Spring Security's page names its header in a meta: tried first; the header's meta is no token.
    assert ways[0] == ("meta", "_csrf", "X-SPRING-CSRF") and {w[1] for w in ways} == {"_csrf"}
    assert c.csrf_meta is None and c.csrf is None


def test_a_post_refused_for_its_csrf_token_is_sent_again_with_it() -> None:
    from lab.investigate.draft.probe import _send
    from lab.investigate.draft.routes import calls_in

    c, d = CsrfApp(), Draft()
    page = calls_in("fetch('/chat/api/send/', {method: 'POST', body: JSON.stringify({message: m})});")
    assert _send(c, d, "chaoslab init probe 1a2b", None, page) is not None  # type: ignore[arg-type]
    assert (d.get("http", "csrf_cookie"), d.get("http", "csrf_header")) == ("csrftoken", "X-CSRFToken")
    assert c.seen == [None, "tok/9"]  # refused without it, taken with it
