"""`lab init`'s probe of a running app: its OpenAPI document where it serves one, else common
paths; then one real send and one history read, whose answers fix the reply's field, the
history's shape, the session cookie and the Redis key. Bounded: a handful of requests to the
app on 127.0.0.1, each with a timeout."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from typing import Any

from lab.common import redact
from lab.common.errors import NotReady
from lab.common.wait import wait_until
from lab.investigate.draft.client import Client
from lab.investigate.draft.infer import (
    reply_elsewhere,
    put_end_event,
    stream_type,
    Draft,
    HistoryShape,
    an_id,
    answer_id,
    history_shape,
    lists,
    order_of_two,
    reply_path,
)
from lab.investigate.draft import frames, html_page, routes, session, openapi as draft_openapi
from lab.investigate.draft.routes import Routes
from lab.investigate.draft.session import at, carried

READY_PATHS = ("/health", "/healthz", "/ready", "/readyz")
CSRF_REFUSED = (400, 403, 419, 422)  # a missing token: Django, gorilla, csurf; Flask-WTF; Laravel; Rails


def probe(
    base_url: str,
    d: Draft,
    login_env: Callable[[str], str | None],
    keys: Callable[[str], list[str]],
    pttl: Callable[[str], int] = lambda key: -2,
) -> None:
    """Fill ``d`` from the app at ``base_url``. ``login_env``: a variable's value (a login's
    body); ``keys(text)``: the keys of the lab's own Redis whose values hold ``text``;
    ``pttl(key)``: that key's PTTL (-1: no TTL, which the draft's notes ask about)."""
    c = Client(base_url)
    _ready(c, d)
    page = routes.read(c)
    html_page.forms(page)
    html_page.started(c, page)
    c.post_headers = dict(page.headers)  # sent with each message, as the app's page sends them
    status, _, doc = c.call("GET", "/openapi.json")
    if status == 200 and isinstance(doc, dict) and "paths" in doc:
        draft_openapi.from_openapi(doc, d)
        page.listed = draft_openapi.listed(doc, d.get("session", "create"))
        d.notes.append("OpenAPI lists no WebSocket routes: a WebSocket the app also has is not drafted ([transport])")
    frames.socketio(c, d)
    if not _login(c, d, login_env):
        return
    if d.get("session", "create") or d.get("chat", "path"):
        sid = _create(c, d)
    else:
        sid = session.created(c, d, page) or session.header_created(c, d, page) or session.page_made(c, d, page)
    text = f"chaoslab init probe {secrets.token_hex(4)}"
    sent, answer_body = _send(c, d, text, sid, page), c.body
    if sent is None:
        socks = frames.sockets_in("\n".join(page.texts))
        over = frames.draft(d, base_url, socks, page.mints, frames.handshake(c)) if socks else None
        if over is None and d.get("transport", "kind") == "socketio":
            over = _socketio(c, d, base_url, page)
        if over is None:
            _unsent(c, d, page)
            return
        sid, text, reply = over  # the chat went over the page's socket, under the id in its URL
        d.unknown.pop("chat.path", None)
        if sid is not None and "session.in" not in d.why:
            value = "{uuid}" if page.mints else "{random}"
            for key, v in (("in", "path"), ("from", "fixed"), ("value", value)):
                d.put("session", key, v, "the page puts an id of its own in the socket's URL")
        _read(c, d, text, reply, sid, page)
        sid = sid or session.cookie(c, d)
    else:
        reply, answer = sent
        _read(c, d, text, reply, sid, page)
        if sid is None and "history.path" in d.unknown and not c.cookies():
            sid = session.answered_id(c, d, text, reply, answer, page)
        sid = sid or session.cookie(c, d)
        _asked_to_stream(c, d, sid)
    session.key(d, text, sid, keys, pttl, again=(lambda: _second(c, d, sid)) if sent is not None else (lambda: None))
    if sent is not None and not sent[0] and d.get("stream", "request") is None and d.get("history", "path"):
        _polled(c, d, text, sent[1], answer_body, sid)


def _polled(c: Client, d: Draft, text: str, answer: Any, body: str, sid: str | None) -> None:
    """[chat] reply_from = "history" where the history shows, within 3 s, a reply no answer carried."""

    def shown() -> tuple[str] | None:  # (why,) once a reply shows ("": the answer holds it)
        why = reply_elsewhere(d, c.call("GET", at(d, str(d.get("history", "path")), sid))[2], text, answer, body)
        return None if why is None else (why,)

    try:
        if why := wait_until(shown, what="a reply in the history", timeout_s=3.0, interval_s=0.15)[0]:
            d.put("chat", "reply_from", "history", why + ": the page reads it there")
    except NotReady:
        pass  # none showed: nothing to say of where the page reads it


def _socketio(c: Client, d: Draft, base_url: str, page: Routes) -> tuple[str | None, str, str] | None:
    """The page's Socket.IO message, emitted once (frames.draft_socketio): what the draft asked of
    it is then known; the id the page mints goes in the message and, where the page reads the
    history by a query parameter, there too (else it is the page's, in the socket's session)."""
    over = frames.draft_socketio(d, base_url, "\n".join(page.texts), frames.handshake(c))
    if over is None:
        return None
    for key in ("transport.event", "transport.chunk", "transport.end", "chat.message_field"):
        d.unknown.pop(key, None)
    queried = page.queried("GET")
    if d.get("session", "field") and queried and "session.in" not in d.why:
        value = "{uuid}" if page.mints else "{random}"
        why = f"the page sends its own id in the message and as ?{queried[0][1]}= of GET {queried[0][0]}"
        for key, v in (("in", "query"), ("name", queried[0][1]), ("from", "fixed"), ("value", value)):
            d.put("session", key, v, why)
        return over
    return None, over[1], over[2]


def _stream_doc(body: str) -> Any:
    """A streamed answer's first event whose JSON names the conversation (an SSE `event: meta`
    with {"conversation": id}, as a Flask app written unseen gives it, 2026-12-06); None: none."""
    for line in body.splitlines():
        try:
            doc = json.loads(line.removeprefix("data:"))
        except ValueError:
            continue
        if answer_id(doc) is not None:
            return doc
    return None


def _ready(c: Client, d: Draft) -> None:
    for path in READY_PATHS:
        if 200 <= c.call("GET", path)[0] < 300:
            d.put("http", "ready_path", path, f"GET {path} answered 2xx")
            return


def _login(c: Client, d: Draft, login_env: Callable[[str], str | None]) -> bool:
    path, body = d.get("auth", "login"), d.get("auth", "body")
    if not path:
        return True
    values = {k: login_env(v[len("{env:") : -1]) for k, v in body.items()}
    unset = [body[k][len("{env:") : -1] for k, v in values.items() if not v]
    if unset:
        d.missing("auth", "body", f"the login's values: set {' and '.join(unset)} (the spec reads them there)")
        return False
    # The draft's {env:NAME} values are the login's secrets, as a spec's [auth] are in a run: kept
    # out of the terminal and the target's log (lab init's lab.investigate.target.redaction scope).
    redact.add(*(v for v in values.values() if v))
    status, _, doc = c.call("POST", path, values)
    token = d.get("auth", "token")
    if not 200 <= status < 300:
        d.missing("auth", "body", f"a login that works: POST {path} answered {status} with the values given")
        return False
    if not token and isinstance(doc, dict):  # an answer OpenAPI did not describe: its token's field
        name = next((k for k, v in doc.items() if "token" in k.lower() and isinstance(v, str) and v), None)
        if name is not None:
            token = f"$.{name}"
            d.put("auth", "token", token, f"the login answered {name!r}")
    if token and isinstance(doc, dict) and isinstance(doc.get(token[2:]), str):
        redact.add(doc[token[2:]])
        c.headers["Authorization"] = "Bearer " + doc[token[2:]]
    return True


def _create(c: Client, d: Draft) -> str | None:
    path, id_path = d.get("session", "create"), d.get("session", "id")
    if not path:
        return None
    status, _, doc = c.call("POST", path)
    if not id_path and (found := session.made_id(doc)) is not None:  # an answer OpenAPI did not describe
        id_path = found[0]
        d.put("session", "id", id_path, f"POST {path} answered {{{id_path[2:]!r}: {found[1]!r}}}")
    ident = doc.get(id_path[2:]) if isinstance(doc, dict) and id_path else None
    if not 200 <= status < 300 or not an_id(ident):
        d.missing("session", "create", f"a create call that answers an id: POST {path} answered {status}")
        return None
    return str(ident)


def _send(c: Client, d: Draft, text: str, sid: str | None, page: Routes) -> tuple[str, Any] | None:
    """One message; the reply's text and the answer (None: no chat route answered)."""
    fields = [d.get("chat", "message_field")] if d.get("chat", "message_field") else page.message_fields()
    paths = [d.get("chat", "path")] if d.get("chat", "path") else page.chats()
    failed: list[str] = []  # a route and field the app failed on (5xx): its own error, not a wrong guess
    for path in paths:
        for field in fields:
            c.form = c.form or path in page.forms  # the page's own form posts it so: sent alike
            status, ctype, doc = c.call("POST", at(d, path, sid), {field: text, **carried(d, sid)})
            if status in CSRF_REFUSED and c.csrf is None and c.csrf_meta is None:
                got = _with_csrf(c, d, path, sid, field, text, status, page.texts)
                status, ctype, doc = got or (status, ctype, doc)
            if status in (400, 415, 422) and not c.form:
                status, ctype, doc = _as_form(c, d, path, sid, field, text) or (status, ctype, doc)
            if status in (0, 404, 405):
                break  # no such route: the next path
            if status >= 500:
                failed.append(f"POST {path} {{{field!r}: ...}} answered {status}")
            if 200 <= status < 300:
                html_page.posted(d, page, path, c.hidden)
                d.put("chat", "path", path, d.why.get("chat.path") or f"POST {path} answered {status}")
                d.put("chat", "message_field", field, d.why.get("chat.message_field") or f"{field!r} was accepted")
                if streamed := stream_type(ctype, c.chunked):
                    d.put("stream", "request", {}, f"the answer streamed ({streamed})")
                    put_end_event(d, c.body)
                    doc = _stream_doc(c.body) if doc is None else doc
                found = reply_path(doc, text)
                if found:
                    d.put("chat", "reply_path", found[0], f"the answer's field holding the reply ({found[1][:40]!r})")
                elif not streamed:  # no reply in it: one streamed on a request of its own, maybe
                    session.reply_stream(c, d, doc, page)
                return (found[1] if found else ""), doc
    if failed:
        d.missing(
            "chat", "path", f"the chat route: {'; '.join(failed)} -- the app failed on the message (its log says why)"
        )
    elif "transport.kind" not in d.why:
        d.missing("chat", "path", f"the chat route: none of POST {', '.join(paths)} took a message")
    return None


def _as_form(c: Client, d: Draft, path: str, sid: str | None, field: str, text: str) -> tuple[int, str, Any] | None:
    """The message as an HTML form posts it, where the route refused it as JSON (aiohttp's
    request.post(), Flask's request.form: a JSON body reads as no field). Taken: the client
    sends forms from now on, and the draft says so; else None and JSON it stays."""
    c.form = True
    got = c.call("POST", at(d, path, sid), {field: text})
    if 200 <= got[0] < 300:
        d.put("chat", "body", "form", f"POST {path} refused the message as JSON ({field!r}) and took it as a form")
        return got
    c.form = False
    return None


def _with_csrf(
    c: Client, d: Draft, path: str, sid: str | None, field: str, text: str, refused: int, texts: list[str]
) -> tuple[int, str, Any] | None:
    """A POST refused (403; Flask-WTF 400, Laravel 419, Rails 422) where the app gave its page a
    CSRF token (a cookie, a <meta> tag): the message again with the token in a header, as the
    app's page sends it. Taken: drafted ([http] csrf_cookie or csrf_meta, and csrf_header) and
    sent on every POST from now on; else None."""
    for kind, name, header in c.csrf_ways(texts):
        got = c.call("POST", at(d, path, sid), {field: text})
        if got[0] in CSRF_REFUSED:
            continue
        d.put("http", f"csrf_{kind}", name, f"POST {path} answered {refused} without its token, {got[0]} with it")
        d.put("http", "csrf_header", header, f"the header that carried {name!r}")
        if kind == "meta" and c.metas_at != "/":
            page = html_page.templated(c.metas_at)
            d.put("chat", "hidden_from", page, f"the page whose <meta name={name!r}> holds the token")
        return got
    return None


def _asked_to_stream(c: Client, d: Draft, sid: str | None) -> None:
    """An answer that was JSON may stream when asked ({"stream": true}, as OpenAI-style APIs
    take it): one more message (in the probe's conversation where its id is in the path or a
    cookie; in one of its own where the answer gives the id)."""
    if d.get("stream", "request") is not None:
        return
    body = {d.get("chat", "message_field"): f"chaoslab init probe {secrets.token_hex(4)}", "stream": True}
    status, ctype, _ = c.call("POST", at(d, str(d.get("chat", "path")), sid), body)
    if 200 <= status < 300 and (streamed := stream_type(ctype, c.chunked)):
        d.put("stream", "request", {"stream": True}, f"a message with stream = true was answered as {streamed}")
        put_end_event(d, c.body)


def _read(c: Client, d: Draft, text: str, reply: str, sid: str | None, page: Routes) -> None:
    # A created conversation's messages first: below the collection its create call made it in.
    made = d.get("session", "create") if d.get("session", "from") == "create" else None
    below = [p for p in page.gets(1) if p.startswith(f"{made}/")] if made else []
    below += [f"{made}/{{session}}/messages", f"{made}/{{session}}"] if made else []
    # Then the page's reads that carry the id as the send did (its path or its query).
    carrier = d.get("session", "in")
    below += page.conversations() if carrier == "path" else [p for p, _ in page.queried("GET")] if carrier else []
    paths = [d.get("history", "path")] if d.get("history", "path") else list(dict.fromkeys(below + page.histories()))
    for path in paths:
        status, _, doc = c.call("GET", at(d, path, sid))
        shape = history_shape(doc, text, reply or None) if 200 <= status < 300 else None
        if shape is None and 200 <= status < 300 and doc is None:  # a page rendered on the server
            shape = html_page.history(c.body, text, reply or None)
        if shape is not None:
            d.history(path, shape, d.why.get("history.path") or f"GET {path} shows the message sent")
            if not reply or shape.format in ("pairs", "html"):  # no order to see in one turn's
                _order_of_two(c, d, text, path, sid or "", shape)
            return
    d.missing("history", "path", f"the history route: none of GET {', '.join(paths)} showed the message sent")


def _second(c: Client, d: Draft, sid: str | None) -> str | None:
    """A second message on the drafted chat route: its text (None: the app did not take it)."""
    second = f"chaoslab init probe {secrets.token_hex(4)}"
    status, _, _ = c.call(
        "POST",
        at(d, str(d.get("chat", "path")), sid or ""),
        {d.get("chat", "message_field"): second, **carried(d, sid)},
    )
    return second if 200 <= status < 300 else None


def _order_of_two(c: Client, d: Draft, first: str, path: str, sid: str, shape: HistoryShape) -> None:
    """The history's order where the reply's text is not known to place it (a streamed answer,
    the app's own format): a second message, then which of the two the read lists first. Not
    told (the second not taken, not shown): the order is asked, never defaulted."""
    second = _second(c, d, sid)
    _, _, doc = c.call("GET", at(d, path, sid))
    html = shape.format == "html" and second is not None and html_page.order_of_two(d, c.body, shape, first, second)
    if second is None or not (html or order_of_two(d, doc, shape.items, first, second)):
        d.missing("history", "order", "oldest_first or newest_first: a second message did not show to tell")


def _unsent(c: Client, d: Draft, page: Routes) -> None:
    """No message could be sent over HTTP: the history and the session cannot be seen at work.
    A history route that answers a list is named as a guess, unconfirmed."""
    for path in page.histories():
        status, _, doc = c.call("GET", path)
        found = lists(doc) if 200 <= status < 300 else []
        if found:
            d.missing(
                "history", "path", f"confirmed by a message in it: GET {path} answers {json.dumps(doc)[:60]} (a guess)"
            )
            d.put("history", "items", found[0][0], f"the list in GET {path}'s answer (empty: unconfirmed)")
            break
    else:
        d.missing("history", "path", "the history route: none of the common ones answered JSON")
    if not c.cookies() and not d.get("session", "in"):
        for key, need in (
            (
                "in",
                "where the conversation's id lives (header | query | path): the app set no cookie, has no create call",
            ),
            ("name", "the header's or query parameter's name (e.g. X-Conversation-Id)"),
            ("from", "where the id comes from: answer (the first answer carries it) | create | fixed"),
            ("id", "where the id is in that answer, e.g. $.conversation_id (docs/app-shapes.md)"),
            ("field", "the message's field that carries the id back, if it does (e.g. conversation_id)"),
        ):
            d.missing("session", key, need)
