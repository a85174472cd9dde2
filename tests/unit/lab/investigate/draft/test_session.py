"""lab init on a reply streamed on a request of its own: the message answered 202 {"turn"}, the
page's EventSource on that turn (examples/node/relay.js's shape), and the id the page mints sent
in the message's body."""

from __future__ import annotations

import json
from typing import Any

from lab.investigate.draft import session
from lab.investigate.draft.infer import Draft
from lab.investigate.draft.routes import calls_in

PAGE = """
const thread = crypto.randomUUID();
fetch("/api/threads/" + thread).then(r => r.json());
fetch("/api/turns", {method: "POST", body: JSON.stringify({thread: thread, prompt: prompt})});
const es = new EventSource("/api/turns/" + turn + "/events");
"""


class RelayApp:
    """POST /api/turns takes {thread: <uuid>, prompt} -> 202 {"turn"}; GET /api/turns/<turn>/events
    streams it once; anything else 404 (the history's GET answers JSON, no stream)."""

    def __init__(self, cookie_session: bool = False) -> None:
        self.turns: list[str] = []
        self.threads: dict[str, list[str]] = {}
        self.body, self.chunked, self.cookie_session = "", False, cookie_session

    def text(self, path: str) -> tuple[int, str, str]:
        status, ctype, doc = self.call("GET", path)
        return status, ctype, json.dumps(doc)

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, str, Any]:
        if method == "POST" and path == "/api/turns":
            ok = isinstance(body, dict) and len(str(body.get("thread", ""))) == 36 and body.get("prompt")
            if not ok and not self.cookie_session:
                return 422, "application/json", {"error": "thread and prompt"}
            # A cookie app takes any field beside the message and keeps it under its cookie.
            thread = "the cookie's" if self.cookie_session else str(body["thread"])
            self.threads.setdefault(thread, []).append(str(body.get("prompt")))
            self.turns.append(f"{len(self.turns):08x}")
            return 202, "application/json", {"turn": self.turns[-1]}
        if method == "GET" and path.startswith("/api/threads/"):
            log = self.threads.get(path.rsplit("/", 1)[1], [])
            return 200, "application/json", {"log": [{"by": "me", "text": t} for t in log]}
        if method == "GET" and path in {f"/api/turns/{t}/events" for t in self.turns}:
            self.body, self.chunked = 'event: token\ndata: {"t": "Hi"}\n\nevent: end\ndata: {}\n\n', False
            return 200, "text/event-stream", None
        return 404, "application/json", None


def test_an_id_the_page_mints_is_found_in_the_messages_body_and_the_reply_on_its_own_stream() -> None:
    app, d, page = RelayApp(), Draft(), calls_in(PAGE)
    sid = session.page_made(app, d, page)  # type: ignore[arg-type]
    assert sid is not None and len(sid) == 36
    got = {k: d.get("session", k) for k in ("in", "from", "value", "field")}
    assert got == {"in": "path", "from": "fixed", "value": "{uuid}", "field": "thread"}
    assert (d.get("chat", "path"), d.get("chat", "message_field")) == ("/api/turns", "prompt")
    assert session.carried(d, sid) == {"thread": sid}
    # The message's answer names the turn; the GET of the page's that streams with it is the follow.
    assert session.reply_stream(app, d, {"turn": app.turns[-1]}, page)  # type: ignore[arg-type]
    assert (d.get("stream", "follow"), d.get("stream", "follow_id")) == ("/api/turns/{turn}/events", "$.turn")
    assert d.get("stream", "request") == {} and d.get("stream", "end") == "event: end"


def test_a_cookie_app_taking_any_field_beside_the_message_is_not_drafted_as_carrying_an_id() -> None:
    """A page that mints a UUID for its own ends: its app takes the message with any extra field,
    but no read under that id shows it -- not the id's carrier."""
    app, d = RelayApp(cookie_session=True), Draft()
    assert session.page_made(app, d, calls_in(PAGE)) is None  # type: ignore[arg-type]
    assert d.get("session", "field") is None and app.turns  # it was taken, and shown nowhere


def test_an_answer_whose_id_no_get_of_the_page_streams_drafts_no_follow() -> None:
    app, d, page = RelayApp(), Draft(), calls_in(PAGE)
    assert not session.reply_stream(app, d, {"turn": "unknown"}, page)  # type: ignore[arg-type]  # 404
    assert not session.reply_stream(app, d, {"ok": True}, page)  # type: ignore[arg-type]  # no id in it
    assert d.get("stream", "follow") is None
    # A page that mints no id: nothing sent in a body of the lab's guessing.
    assert session.page_made(app, Draft(), calls_in(PAGE.replace("crypto.randomUUID()", '"x"'))) is None  # type: ignore[arg-type]
    assert app.turns == []


def test_a_reply_the_answer_holds_nowhere_is_one_the_page_polls_for() -> None:
    """[chat] reply_from = "history" from the history read after the probe: a reply after the
    message that the answer holds in none of its strings (escaped or not) -- not one it holds,
    nor before any reply shows (None: read again)."""
    from lab.investigate.draft.infer import reply_elsewhere

    d = Draft()
    for key, value in dict(
        path="/api/threads/{session}", items="$.log", format="objects", role_field="by", content_field="text",
        user_role="me", assistant_role="assistant", order="oldest_first",
    ).items():  # fmt: skip
        d.put("history", key, value, "the read after the send")
    log = {"log": [{"by": "me", "text": "hi"}, {"by": "assistant", "text": 'I said "hello".'}]}
    why = reply_elsewhere(d, log, "hi", {"turn": "9f3a"}, '{"turn": "9f3a"}')
    assert why and "holds none of the reply" in why
    held = {"reply": 'I said "hello".'}
    assert reply_elsewhere(d, log, "hi", held, '{"reply": "I said \\"hello\\"."}') == ""  # escaped in its body
    assert reply_elsewhere(d, {"log": log["log"][:1]}, "hi", {"turn": "9f3a"}, "{}") is None  # not yet
