"""lab init's probe against apps of shapes it must draft whole, each an in-memory app answering
the probe's requests: the conversation's id that only the first answer gives (read back in the
history's query, carried back in the query or the body), and an answer that streams (always, or
when asked with stream = true)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

from lab.investigate.draft.infer import Draft
from lab.investigate.draft.probe import probe


class NoTokens:
    """Client's CSRF side for an app that gives its page no token: a refusal (400) is no CSRF one."""

    csrf = csrf_meta = None

    def csrf_ways(self, texts: object = ()) -> Iterator[tuple[str, str, str]]:
        yield from ()


class App(NoTokens):
    """POST /api/chat {"prompt", "conversation_id"?}; GET /api/history?conversation_id=...
    ``takes``: where a send's id is read ("body", "query" or "" -- never: each send starts anew);
    ``streams``: "always", "asked" (stream = true) or ""."""

    body = ""  # the last answer's body, as Client keeps it
    chunked = False  # and whether it came in chunks
    form = False  # bodies as JSON (Client.form)

    def __init__(
        self, takes: str = "body", streams: str = "", fails: bool = False, by_path: bool = False, param: str = ""
    ) -> None:
        self.takes, self.streams, self.fails, self.by_path = takes, streams, fails, by_path
        self.param = param or "conversation_id"  # the history's query parameter
        self.convs: dict[str, list[dict[str, str]]] = {}

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, str, Any]:
        url = urlsplit(path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        if method == "POST" and url.path == "/api/chat" and isinstance(body, dict) and "prompt" in body:
            if self.fails:  # its store broken (a client bound to a closed loop): every message a 500
                return 500, "text/html", None
            cid = {"body": body.get("conversation_id"), "query": query.get(self.param)}.get(self.takes)
            cid = cid or uuid.uuid4().hex
            answer = f"Echo: {body['prompt']}"
            self.convs.setdefault(cid, []).extend(
                [{"who": "human", "text": body["prompt"]}, {"who": "ai", "text": answer}]
            )
            if self.streams == "always" or (self.streams == "asked" and body.get("stream")):
                self.body = f"event: token\ndata: {answer}\n\nevent: done\ndata: {{}}\n\n"
                return 200, "text/event-stream; charset=utf-8", None
            if self.streams.startswith("text/plain"):  # the reply's text itself, in chunks or whole
                self.chunked = self.streams.endswith("; chunked")
                return 200, self.streams.removesuffix("; chunked"), None
            return 200, "application/json", {"conversation_id": cid, "output": answer}
        if method == "POST" and url.path == "/api/chat":
            return 422, "application/json", {"detail": "prompt required"}
        if method == "GET" and url.path == "/api/history" and not self.by_path:
            return 200, "application/json", {"items": self.convs.get(query.get(self.param, ""), [])}
        parts = url.path.split("/")  # /api/conversations/<id>/messages
        if method == "GET" and self.by_path and len(parts) == 5 and parts[1:3] == ["api", "conversations"]:
            if parts[4] == "messages" and parts[3] in self.convs:
                return 200, "application/json", {"items": self.convs[parts[3]]}
            return 404, "application/json", {"detail": "no such conversation"}
        return 404, "application/json", {"detail": "not found"}

    def cookies(self) -> dict[str, str]:
        return {}

    path = "/"  # the page answered where it was asked: no redirect
    hidden: dict[str, str] = {}  # and held no form with hidden inputs

    def text(self, path: str) -> tuple[int, str, str]:
        return 404, "text/plain", "no page"


def _probe(app: App, monkeypatch: Any, pttl_ms: int = 86_400_000) -> Draft:
    from lab.investigate.draft import probe as mod

    monkeypatch.setattr(mod, "Client", lambda base: app)
    d = Draft()

    def held(text: str) -> list[str]:
        return [f"thread:{c}:events" for c, items in app.convs.items() if any(text in json.dumps(i) for i in items)]

    probe(
        "http://127.0.0.1:1", d, lambda name: None, held, lambda key: pttl_ms if key in map(held_key, app.convs) else -2
    )
    return d


def held_key(conversation: str) -> str:
    return f"thread:{conversation}:events"


def test_a_key_with_no_ttl_asks_whether_conversations_expire(monkeypatch: Any) -> None:
    """A run sees a TTL the app sets; one it never sets may be on purpose: the draft asks."""
    assert not any("expires" in n for n in _probe(App("body"), monkeypatch).notes)
    notes = _probe(App("body"), monkeypatch, pttl_ms=-1).notes
    assert any(n.startswith("[redis] expires: the conversation's key has no TTL") for n in notes), notes


def test_an_id_the_first_answer_gives_carried_back_in_the_body(monkeypatch: Any) -> None:
    d = _probe(App("body"), monkeypatch)
    assert d.sections["session"] == {
        "in": "query", "name": "conversation_id", "from": "answer", "id": "$.conversation_id", "field": "conversation_id",
    }, d.sections  # fmt: skip
    assert d.get("history", "path") == "/api/history" and d.get("history", "role_field") == "who"
    assert d.get("redis", "key") == "thread:{session}:events" and not d.unknown, d.unknown


def test_an_id_carried_back_in_the_query_needs_no_field(monkeypatch: Any) -> None:
    d = _probe(App("query"), monkeypatch)
    assert d.get("session", "in") == "query" and d.get("session", "field") is None and not d.unknown, d.sections


def test_an_app_that_starts_anew_at_every_send_is_named_not_guessed(monkeypatch: Any) -> None:
    d = _probe(App(""), monkeypatch)
    assert d.get("session", "from") == "answer" and "session.field" in d.unknown, d.unknown


def test_an_answer_that_streams_always_or_when_asked(monkeypatch: Any) -> None:
    assert _probe(App("body", streams="asked"), monkeypatch).get("stream", "request") == {"stream": True}
    assert _probe(App("body"), monkeypatch).get("stream", "request") is None
    assert _probe(App("body", streams="always"), monkeypatch).get("stream", "request") == {}
    assert _probe(App("body", streams="asked"), monkeypatch).get("stream", "end") == "event: done"
    # Plain text: a stream where it came in chunks (a token stream), not where it came whole.
    assert _probe(App("body", streams="text/plain; charset=utf-8; chunked"), monkeypatch).get("stream", "request") == {}
    assert _probe(App("body", streams="text/plain; charset=utf-8"), monkeypatch).get("stream", "request") is None


def test_a_chat_route_the_app_failed_on_is_named_with_its_status(monkeypatch: Any) -> None:
    """A 5xx is the app's own error on the right route, not a route that is not there: the draft
    says which route and field it was, where "none took a message" would send the user looking
    for another route."""
    d = _probe(App("body", fails=True), monkeypatch)
    assert "POST /api/chat {'prompt': ...} answered 500" in d.unknown["chat.path"], d.unknown


def test_an_id_the_first_answer_gives_read_back_in_a_conversations_path(monkeypatch: Any) -> None:
    """POST /api/chat {prompt, conversation_id} and GET /api/conversations/<id>/messages: the id
    a path segment of the history only -- the chat route carries it in the body's field."""
    d = _probe(App("body", by_path=True), monkeypatch)
    assert d.sections["session"] == {
        "in": "path", "from": "answer", "id": "$.conversation_id", "field": "conversation_id",
    }, d.sections  # fmt: skip
    assert d.get("history", "path") == "/api/conversations/{session}/messages" and not d.unknown, d.unknown


def test_an_id_read_back_under_another_query_name(monkeypatch: Any) -> None:
    """The answer says conversation_id, the history takes ?id=: the query's name is the one that
    read it back; the body's field is the answer's own."""
    d = _probe(App("body", param="id"), monkeypatch)
    assert d.get("session", "in") == "query" and d.get("session", "name") == "id", d.sections
    assert d.get("session", "field") == "conversation_id" and not d.unknown, d.unknown


class RestApp(NoTokens):
    """A REST chat with no OpenAPI document (Express, Go): POST /api/conversations answers
    {"id"}; POST /api/conversations/<id>/messages {"content"} answers the reply; GET on the
    same path lists {"role", "content"} items."""

    body = ""  # the last answer's body, as Client keeps it
    chunked = False  # and whether it came in chunks
    form = False  # bodies as JSON (Client.form)

    def __init__(self) -> None:
        self.convs: dict[str, list[dict[str, str]]] = {}

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, str, Any]:
        parts = urlsplit(path).path.strip("/").split("/")
        if method == "POST" and parts == ["api", "conversations"]:
            cid = uuid.uuid4().hex[:20]
            self.convs[cid] = []
            return 201, "application/json", {"id": cid, "title": None}
        if len(parts) == 4 and parts[:2] == ["api", "conversations"] and parts[3] == "messages":
            if parts[2] not in self.convs:
                return 404, "application/json", {"error": "no such conversation"}
            if method == "GET":
                return 200, "application/json", {"data": self.convs[parts[2]]}
            if method == "POST" and isinstance(body, dict) and isinstance(body.get("content"), str):
                reply = f"Noted ({len(body['content'])} chars)."
                self.convs[parts[2]] += [
                    {"role": "user", "content": body["content"]},
                    {"role": "assistant", "content": reply},
                ]
                return 200, "application/json", {"role": "assistant", "content": reply}
            return 400, "application/json", {"error": "content required"}
        return 404, "application/json", {"error": "not found"}

    def cookies(self) -> dict[str, str]:
        return {}

    path = "/"  # the page answered where it was asked: no redirect
    hidden: dict[str, str] = {}  # and held no form with hidden inputs

    def text(self, path: str) -> tuple[int, str, str]:
        return 404, "text/plain", "no page"


def test_a_create_call_no_openapi_names_is_found_by_its_collection(monkeypatch: Any) -> None:
    from lab.investigate.draft import probe as mod

    app = RestApp()
    monkeypatch.setattr(mod, "Client", lambda base: app)
    d = Draft()
    probe("http://127.0.0.1:1", d, lambda name: None, lambda text: [])
    assert d.sections["session"] == {"in": "path", "from": "create", "create": "/api/conversations", "id": "$.id"}
    assert (
        d.get("chat", "path") == "/api/conversations/{session}/messages" and d.get("chat", "message_field") == "content"
    )
    assert d.get("history", "path") == "/api/conversations/{session}/messages" and d.get("history", "items") == "$.data"
    assert d.get("chat", "reply_path") == "$.content" and set(d.unknown) <= {"redis.key"}, d.unknown


class RoomsApp(NoTokens):
    """No OpenAPI, route names of its own: POST /api/rooms answers {"room": id, "idle_ttl"};
    POST /api/rooms/<id>/say {"prompt"} streams its answer; GET /api/rooms/<id> lists the
    entries newest first. Its page at / loads /static/app.js, which builds the URLs by joining
    strings, as an app's own page does."""

    body = ""  # the last answer's body, as Client keeps it
    chunked = False  # and whether it came in chunks
    form = False  # bodies as JSON (Client.form)

    SCRIPT = """
    async function open() { const r = await fetch("/api/rooms", { method: "POST" }); room = (await r.json()).room; }
    async function load() { const r = await fetch("/api/rooms/" + room); }
    async function say(text) {
      await fetch("/api/rooms/" + encodeURIComponent(room) + "/say", {
        method: "POST", headers: {"content-type": "application/json"}, body: JSON.stringify({ prompt: text }),
      });
    }
    """

    base = "http://127.0.0.1:1"

    def __init__(self) -> None:
        self.rooms: dict[str, list[dict[str, str]]] = {}

    path = "/"  # the page answered where it was asked: no redirect
    hidden: dict[str, str] = {}  # and held no form with hidden inputs

    def text(self, path: str) -> tuple[int, str, str]:
        if path == "/":
            return 200, "text/html", '<html><script src="/static/app.js"></script></html>'
        return (200, "text/javascript", self.SCRIPT) if path == "/static/app.js" else (404, "text/plain", "")

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, str, Any]:
        parts = urlsplit(path).path.strip("/").split("/")
        if method == "POST" and parts == ["api", "rooms"]:
            rid = uuid.uuid4().hex[:16]
            self.rooms[rid] = []
            return 201, "application/json", {"room": rid, "idle_ttl": 2700}
        if len(parts) >= 3 and parts[:2] == ["api", "rooms"] and parts[2] in self.rooms:
            if method == "GET" and len(parts) == 3:
                return 200, "application/json", {"room": parts[2], "entries": self.rooms[parts[2]][::-1]}
            if method == "POST" and parts[3:] == ["say"] and isinstance(body, dict) and body.get("prompt"):
                self.rooms[parts[2]] += [{"who": "human", "text": body["prompt"]}, {"who": "bot", "text": "Good one"}]
                return 200, "text/event-stream", None
        return 404, "application/json", {"error": "not found"}

    def cookies(self) -> dict[str, str]:
        return {}


def test_the_routes_the_apps_own_page_calls_and_the_order_of_two_messages(monkeypatch: Any) -> None:
    """Route names no list holds, read from the page's script; the create answer's one word its
    id; a streamed answer (no reply text to place), so the order told by a second message."""
    from lab.investigate.draft import probe as mod

    app = RoomsApp()
    monkeypatch.setattr(mod, "Client", lambda base: app)
    d = Draft()
    probe("http://127.0.0.1:1", d, lambda name: None, lambda text: [])
    assert d.get("session", "create") == "/api/rooms" and d.get("session", "id") == "$.room", d.why
    assert d.get("chat", "path") == "/api/rooms/{session}/say" and d.get("chat", "message_field") == "prompt"
    assert d.get("history", "path") == "/api/rooms/{session}" and d.get("history", "items") == "$.entries"
    assert d.get("history", "order") == "newest_first", d.why
    assert "a second message listed before the first" in d.why["history.order"]


class MintingApp(NoTokens):
    """Its page mints the conversation's id (crypto.randomUUID(), in localStorage) and builds
    its one URL in a helper; no create call, no cookie. The route takes only ids of its own
    check: a UUID (``dashes``) or 32 hex digits. POST answers {"reply": {"author", "body"}};
    GET lists {"messages": [...]} oldest first."""

    body = ""  # the last answer's body, as Client keeps it
    chunked = False  # and whether it came in chunks
    form = False  # bodies as JSON (Client.form)

    SCRIPT = """
      let cid = localStorage.getItem(KEY);
      if (!cid) { cid = crypto.randomUUID(); localStorage.setItem(KEY, cid); }
      const url = () => '/v1/conversations/' + encodeURIComponent(cid) + '/messages';
      async function load() { const res = await fetch(url(), { headers: { Accept: 'application/json' } }); }
      async function send(body) {
        const res = await fetch(url(), { method: 'POST', body: JSON.stringify({ body: body }) });
      }
    """

    def __init__(self, dashes: bool) -> None:
        self.dashes = dashes
        self.convs: dict[str, list[dict[str, str]]] = {}

    path = "/"  # the page answered where it was asked: no redirect
    hidden: dict[str, str] = {}  # and held no form with hidden inputs

    def text(self, path: str) -> tuple[int, str, str]:
        return (200, "text/html", f"<html><script>{self.SCRIPT}</script></html>") if path == "/" else (404, "", "")

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, str, Any]:
        parts = urlsplit(path).path.strip("/").split("/")
        if len(parts) != 4 or parts[:2] != ["v1", "conversations"] or parts[3] != "messages":
            return 404, "application/json", {"error": "not found"}
        try:
            ok = str(uuid.UUID(parts[2])) == parts[2] if self.dashes else uuid.UUID(parts[2]).hex == parts[2]
        except ValueError:
            ok = False
        if not ok:
            return 400, "application/json", {"error": {"code": "bad_conversation_id"}}
        if method == "GET":
            return 200, "application/json", {"messages": self.convs.get(parts[2], [])}
        if not isinstance(body, dict) or not body.get("body"):
            return 400, "application/json", {"error": {"code": "empty"}}
        reply = {"author": "assistant", "body": f"About {len(body['body'])} letters, then."}
        self.convs.setdefault(parts[2], []).extend([{"author": "user", "body": body["body"]}, reply])
        return 200, "application/json", {"reply": reply}

    def cookies(self) -> dict[str, str]:
        return {}


def test_an_id_the_page_mints_is_drafted_as_one_the_lab_mints_of_its_kind(monkeypatch: Any) -> None:
    from lab.investigate.draft import probe as mod

    for dashes, value in ((True, "{uuid}"), (False, "{random}")):
        app = MintingApp(dashes)
        monkeypatch.setattr(mod, "Client", lambda base: app)
        d = Draft()
        probe("http://127.0.0.1:1", d, lambda name: None, lambda text: [])
        assert d.sections["session"] == {"in": "path", "from": "fixed", "value": value}, d.why
        assert d.get("chat", "path") == d.get("history", "path") == "/v1/conversations/{session}/messages"
        assert d.get("chat", "message_field") == "body" and d.get("history", "role_field") == "author"
        assert d.get("chat", "reply_path") == "$.reply.body" and set(d.unknown) <= {"redis.key"}, d.unknown


def test_a_page_that_does_not_mint_ids_is_not_drafted_as_one(monkeypatch: Any) -> None:
    from lab.investigate.draft import probe as mod

    app = MintingApp(dashes=True)
    app.SCRIPT = app.SCRIPT.replace("crypto.randomUUID()", "window.CONVERSATION")
    monkeypatch.setattr(mod, "Client", lambda base: app)
    d = Draft()
    probe("http://127.0.0.1:1", d, lambda name: None, lambda text: [])
    assert "session" not in d.sections and "chat.path" in d.unknown


class QueryApp(NoTokens):
    """A create call answering {"conv", "idleTtl"} (its page POSTs no body); the chat at
    /api/chat?s=<id> {"text"} streams SSE; the history at /api/history?s=<id> lists
    {"messages": [{"from", "content"}]} newest first. Every route refuses an unknown id (404)."""

    body = ""  # the last answer's body, as Client keeps it
    chunked = False  # and whether it came in chunks
    form = False  # bodies as JSON (Client.form)

    SCRIPT = """
    async function newConv() { const res = await fetch("/api/sessions", { method: "POST" }); }
    async function load(conv) { let res = await fetch("/api/history?s=" + encodeURIComponent(conv)); }
    async function send(conv, text) {
      const res = await fetch("/api/chat?s=" + encodeURIComponent(conv), {
        method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ text }),
      });
    }
    """

    def __init__(self) -> None:
        self.convs: dict[str, list[dict[str, str]]] = {}

    path = "/"  # the page answered where it was asked: no redirect
    hidden: dict[str, str] = {}  # and held no form with hidden inputs

    def text(self, path: str) -> tuple[int, str, str]:
        return (200, "text/html", f"<html><script>{self.SCRIPT}</script></html>") if path == "/" else (404, "", "")

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, str, Any]:
        url = urlsplit(path)
        conv = parse_qs(url.query).get("s", [""])[0]
        if method == "POST" and url.path == "/api/sessions":
            made = uuid.uuid4().hex[:16]
            self.convs[made] = []
            return 201, "application/json", {"conv": made, "idleTtl": 86400}
        if url.path in ("/api/chat", "/api/history") and conv not in self.convs:
            return 404, "application/json", {"error": "unknown_conv"}
        if method == "POST" and url.path == "/api/chat" and isinstance(body, dict) and body.get("text"):
            self.convs[conv] += [{"from": "user", "content": body["text"]}, {"from": "bot", "content": "Noted."}]
            return 200, "text/event-stream", None
        if method == "GET" and url.path == "/api/history":
            return 200, "application/json", {"conv": conv, "messages": self.convs[conv][::-1]}
        return 404, "application/json", {"error": "not found"}

    def cookies(self) -> dict[str, str]:
        return {}


def test_a_create_call_whose_id_the_page_sends_in_the_query(monkeypatch: Any) -> None:
    """The create call is not taken for the chat (its answer's id is no reply); the id goes in the
    query of both the send and the read, as the page sends it."""
    from lab.investigate.draft import probe as mod

    app = QueryApp()
    monkeypatch.setattr(mod, "Client", lambda base: app)
    d = Draft()
    probe("http://127.0.0.1:1", d, lambda name: None, lambda text: [])
    assert d.sections["session"] == {
        "in": "query",
        "name": "s",
        "from": "create",
        "create": "/api/sessions",
        "id": "$.conv",
    }, d.why
    assert d.get("chat", "path") == "/api/chat" and d.get("chat", "message_field") == "text"
    assert d.get("history", "path") == "/api/history" and d.get("history", "order") == "newest_first", d.why
    assert d.get("chat", "reply_path") is None and set(d.unknown) <= {"redis.key"}, d.unknown


class HeaderApp:
    """A create call answering {"token"} (its page POSTs no body); the token then goes in a header
    of the app's own (X-Chat-Token) on the chat (POST /api/ask {"question"}) and the read (GET
    /api/transcript); a call without it is refused (401). A Go app written unseen, 2026-12-06:
    lab init drafted /api/session as the chat route before."""

    body = ""
    chunked = False
    form = False  # bodies as JSON (Client.form)

    SCRIPT = """
    const res = await fetch("/api/session", { method: "POST" });
    const r = await fetch("/api/transcript", { headers: { "X-Chat-Token": token } });
    await fetch("/api/ask", { method: "POST",
      headers: { "Content-Type": "application/json", "X-Chat-Token": token }, body: JSON.stringify({ question: q }) });
    """

    def __init__(self) -> None:
        self.headers: dict[str, str] = {}
        self.convs: dict[str, list[dict[str, str]]] = {}

    path = "/"  # the page answered where it was asked: no redirect
    hidden: dict[str, str] = {}  # and held no form with hidden inputs

    def text(self, path: str) -> tuple[int, str, str]:
        return (200, "text/html", f"<script>{self.SCRIPT}</script>") if path == "/" else (404, "", "")

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, str, Any]:
        token = self.headers.get("X-Chat-Token", "")
        if method == "POST" and path == "/api/session":  # takes any body: it is no chat route
            self.convs[made := uuid.uuid4().hex] = []
            return 200, "application/json", {"token": made}
        if token not in self.convs:
            return 401, "application/json", {"error": "missing or unknown X-Chat-Token"}
        if method == "POST" and path == "/api/ask" and isinstance(body, dict) and body.get("question"):
            self.convs[token] += [
                {"speaker": "user", "words": body["question"]},
                {"speaker": "assistant", "words": "ok"},
            ]
            return 200, "application/json", {"answer": "ok"}
        if method == "GET" and path == "/api/transcript":
            return 200, "application/json", {"entries": self.convs[token][::-1]}
        return 404, "application/json", {"error": "not found"}

    def cookies(self) -> dict[str, str]:
        return {}


def test_a_create_call_whose_id_the_page_sends_in_a_header_of_its_own(monkeypatch: Any) -> None:
    from lab.investigate.draft import probe as mod

    app = HeaderApp()
    monkeypatch.setattr(mod, "Client", lambda base: app)
    d = Draft()
    probe("http://127.0.0.1:1", d, lambda name: None, lambda text: [])
    assert d.sections["session"] == {
        "in": "header", "name": "X-Chat-Token", "from": "create", "create": "/api/session", "id": "$.token",
    }, d.why  # fmt: skip
    assert d.get("chat", "path") == "/api/ask" and d.get("chat", "message_field") == "question", d.why
    assert d.get("history", "path") == "/api/transcript" and d.get("history", "order") == "newest_first", d.why
