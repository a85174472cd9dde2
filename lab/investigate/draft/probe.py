"""`lab init`'s probe of a running app: its OpenAPI document where it serves one, else common
paths; then one real send and one history read, whose answers fix the reply's field, the
history's shape, the session cookie and the Redis key. Bounded: a handful of requests to the
app on 127.0.0.1, each with a timeout."""

from __future__ import annotations

import json
import re
import secrets
from urllib.parse import quote, urlencode
from collections.abc import Callable
from typing import Any

from lab.common import redact
from lab.investigate.draft import openapi as draft_openapi
from lab.investigate.draft.client import Client
from lab.investigate.draft.infer import (
    Draft,
    HistoryShape,
    an_id,
    answer_id,
    history_shape,
    key_pattern,
    lists,
    pick_cookie,
    reply_path,
)
from lab.investigate.draft import routes
from lab.investigate.draft.routes import QUERY_NAMES, Routes

READY_PATHS = ("/health", "/healthz", "/ready", "/readyz")
STREAM_TYPES = ("text/event-stream", "application/x-ndjson", "application/jsonl")


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
    status, _, doc = c.call("GET", "/openapi.json")
    if status == 200 and isinstance(doc, dict) and "paths" in doc:
        draft_openapi.from_openapi(doc, d)
        d.notes.append("OpenAPI lists no WebSocket routes: a WebSocket the app also has is not drafted ([transport])")
    routes.socketio(c, d)
    if not _login(c, d, login_env):
        return
    sid = _create(c, d) if d.get("session", "create") or d.get("chat", "path") else _created(c, d, page)
    text = f"chaoslab init probe {secrets.token_hex(4)}"
    sent = _send(c, d, text, sid, page)
    if sent is None:
        _unsent(c, d, page)
        return
    reply, answer = sent
    _read(c, d, text, reply, sid, page)
    if sid is None and "history.path" in d.unknown and not c.cookies():
        sid = _answered_id(c, d, text, reply, answer, page)
    sid = sid or _cookie(c, d)
    _asked_to_stream(c, d, sid)
    holding = keys(text)
    pattern = key_pattern(holding, sid) if sid else None
    if pattern:
        d.put("redis", "key", pattern, "the key holding the message sent, named after the session")
        if sid and pttl(pattern.replace("{session}", sid)) == -1:
            # A run sees a TTL the app sets; one it never sets may be on purpose or forgotten.
            d.notes.append(
                "[redis] expires: the conversation's key has no TTL -- if conversations are meant to expire, "
                "add expires = true (a key with none is then a defect: no_ttl); expires = false says they are kept"
            )
    else:  # optional: without it the lab reads no TTL and no raw values (fewer diagnoses)
        d.notes.append(
            "[redis] key: not inferred -- "
            + (
                f"the keys holding the message ({', '.join(holding[:3])}) are not named after the session"
                if holding
                else "no key in the lab's Redis holds the message sent"
            )
            + "; without it, the TTL rules and history_hides_stored are not judged"
        )


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
    if token and isinstance(doc, dict) and isinstance(doc.get(token[2:]), str):
        redact.add(doc[token[2:]])
        c.headers["Authorization"] = "Bearer " + doc[token[2:]]
    return True


def _create(c: Client, d: Draft) -> str | None:
    path, id_path = d.get("session", "create"), d.get("session", "id")
    if not path:
        return None
    status, _, doc = c.call("POST", path)
    ident = doc.get(id_path[2:]) if isinstance(doc, dict) else None
    if not 200 <= status < 300 or not isinstance(ident, str):
        d.missing("session", "create", f"a create call that answers an id: POST {path} answered {status}")
        return None
    return ident


def _created(c: Client, d: Draft, page: Routes) -> str | None:
    """A create call no OpenAPI document names (REST apps in Express, Go, Rails): POST to a
    collection (/api/conversations ...) with no body answering an id ($.id, $.conversation_id
    ...), a message then taken by a route below it (<collection>/{session}/messages ...).
    Drafted only once a message was taken there; None: not this shape (nothing drafted)."""
    made: dict[str, tuple[str, str] | None] = {}  # each collection POSTed once
    for path, below in page.creates():
        if path not in made:
            status, _, doc = c.call("POST", path, {})
            made[path] = _made_id(doc) if 200 <= status < 300 else None
        found = made[path]
        if found is not None:
            chat = f"{path}/{{session}}{below}"
            if any(200 <= c.call("POST", chat.replace("{session}", found[1]), {f: "chaoslab init probe"})[0] < 300
                   for f in page.message_fields()):  # fmt: skip
                why = f"POST {path} answered {found[0]} ({found[1][:12]}...), and POST {chat} took a message"
                for key, value in (("in", "path"), ("from", "create"), ("create", path), ("id", found[0])):
                    d.put("session", key, value, why)
                d.put("chat", "path", chat, why)
                return found[1]
    return None


def _made_id(doc: Any) -> tuple[str, str] | None:
    """A create call's answer's id: a field of its own, the object's id, else its one word that
    is not a time or a URL ({"room": "5f8c...", "idle_ttl": 2700}) -- confirmed only by a message
    then taken below it."""
    found = answer_id(doc) or (("$.id", doc["id"]) if isinstance(doc, dict) and an_id(doc.get("id")) else None)
    if found is not None or not isinstance(doc, dict):
        return found
    words = [(k, v) for k, v in doc.items() if an_id(v) and not re.match(r"\d{4}-\d\d-\d\d|https?:", v)]
    return (f"$.{words[0][0]}", words[0][1]) if len(words) == 1 else None


def _send(c: Client, d: Draft, text: str, sid: str | None, page: Routes) -> tuple[str, Any] | None:
    """One message; the reply's text and the answer (None: no chat route answered)."""
    fields = [d.get("chat", "message_field")] if d.get("chat", "message_field") else page.message_fields()
    paths = [d.get("chat", "path")] if d.get("chat", "path") else page.chats()
    failed: list[str] = []  # a route and field the app failed on (5xx): its own error, not a wrong guess
    for path in paths:
        for field in fields:
            status, ctype, doc = c.call("POST", path.replace("{session}", sid or ""), {field: text})
            if status in (0, 404, 405):
                break  # no such route: the next path
            if status >= 500:
                failed.append(f"POST {path} {{{field!r}: ...}} answered {status}")
            if 200 <= status < 300:
                d.put("chat", "path", path, d.why.get("chat.path") or f"POST {path} answered {status}")
                d.put("chat", "message_field", field, d.why.get("chat.message_field") or f"{field!r} was accepted")
                if streamed := _stream_type(ctype):
                    d.put("stream", "request", {}, f"the answer streamed ({streamed})")
                found = reply_path(doc, text)
                if found:
                    d.put("chat", "reply_path", found[0], f"the answer's field holding the reply ({found[1][:40]!r})")
                return (found[1] if found else ""), doc
    if failed:
        d.missing(
            "chat", "path", f"the chat route: {'; '.join(failed)} -- the app failed on the message (its log says why)"
        )
    elif "transport.kind" not in d.why:
        d.missing("chat", "path", f"the chat route: none of POST {', '.join(paths)} took a message")
    return None


def _asked_to_stream(c: Client, d: Draft, sid: str | None) -> None:
    """An answer that was JSON may stream when asked ({"stream": true}, as OpenAI-style APIs
    take it): one more message (in the probe's conversation where its id is in the path or a
    cookie; in one of its own where the answer gives the id)."""
    if d.get("stream", "request") is not None:
        return
    body = {d.get("chat", "message_field"): f"chaoslab init probe {secrets.token_hex(4)}", "stream": True}
    status, ctype, _ = c.call("POST", str(d.get("chat", "path")).replace("{session}", sid or ""), body)
    if 200 <= status < 300 and (streamed := _stream_type(ctype)):
        d.put("stream", "request", {"stream": True}, f"a message with stream = true was answered as {streamed}")


def _stream_type(ctype: str) -> str | None:
    """The content type of an answer that streams (SSE, NDJSON), else None."""
    return ctype.split(";")[0].strip() if any(t in ctype for t in STREAM_TYPES) else None


def _read(c: Client, d: Draft, text: str, reply: str, sid: str | None, page: Routes) -> None:
    # A created conversation's messages first: below the collection its create call made it in.
    made = d.get("session", "create") if d.get("session", "from") == "create" else None
    below = [p for p in page.gets(1) if p.startswith(f"{made}/")] if made else []
    below += [f"{made}/{{session}}/messages", f"{made}/{{session}}"] if made else []
    paths = [d.get("history", "path")] if d.get("history", "path") else list(dict.fromkeys(below + page.histories()))
    for path in paths:
        status, _, doc = c.call("GET", path.replace("{session}", sid or ""))
        shape = history_shape(doc, text, reply or None) if 200 <= status < 300 else None
        if shape is not None:
            _history(d, path, shape, d.why.get("history.path") or f"GET {path} shows the message sent")
            if not reply:
                _order_of_two(c, d, text, path, sid or "", shape)
            return
    d.missing("history", "path", f"the history route: none of GET {', '.join(paths)} showed the message sent")


def _order_of_two(c: Client, d: Draft, first: str, path: str, sid: str, shape: HistoryShape) -> None:
    """The history's order where the reply's text is not known to place it (a streamed answer,
    the app's own format): a second message, then which of the two the read lists first. Not
    told (the second not taken, not shown): the order is asked, never defaulted."""
    second = f"chaoslab init probe {secrets.token_hex(4)}"
    c.call("POST", str(d.get("chat", "path")).replace("{session}", sid), {d.get("chat", "message_field"): second})
    _, _, doc = c.call("GET", path.replace("{session}", sid))
    items = next((v for k, v in lists(doc) if k == shape.items), [])
    at = [next((i for i, it in enumerate(items) if x in str(it)), None) for x in (first, second)]
    if at[0] is None or at[1] is None:
        d.missing("history", "order", "oldest_first or newest_first: a second message did not show to tell")
        return
    order = "newest_first" if at[1] < at[0] else "oldest_first"
    d.put("history", "order", order, f"a second message listed {'before' if at[1] < at[0] else 'after'} the first")


def _history(d: Draft, path: str, shape: HistoryShape, why: str) -> None:
    d.put("history", "path", path, why)
    fields = ("separator",) if shape.format == "strings" else ("role_field", "content_field")
    for key in ("items", "format", *fields, "order", "user_role", "assistant_role"):
        d.put("history", key, getattr(shape, key), "the read after the send")


def _answered_id(c: Client, d: Draft, text: str, reply: str, answer: Any, page: Routes) -> str | None:
    """A conversation whose id only the first answer gives ($.conversation_id, $.thread_id ...):
    the history read with it -- a query parameter of the same name, else a segment of a
    conversation's path (/api/conversations/<id>/messages) -- then a second message sent with it
    (in the chat URL's query alone, else in the body's field of that name too, as the lab's page
    would send it) must land in the same conversation. None: not this shape."""
    found = answer_id(answer)
    if found is None:
        return None
    id_path, sid = found
    name = id_path[2:].replace(".id", "_id") if id_path.endswith(".id") else id_path[2:]
    paths = [d.get("history", "path")] if d.get("history", "path") else page.histories()
    names = list(dict.fromkeys((name, *QUERY_NAMES)))  # the answer's own name first
    tries = [(f"{p}?{urlencode({q: sid})}", p, "query", q) for q in names for p in paths] + [
        (t.replace("{session}", quote(sid, safe="")), t, "path", name) for t in page.conversations()
    ]
    for url, template, carrier, qname in tries:
        status, _, doc = c.call("GET", url)
        shape = history_shape(doc, text, reply or None) if 200 <= status < 300 else None
        if shape is None:
            continue
        where = f"{template}?{qname}=<id>" if carrier == "query" else template
        _history(d, template, shape, f"GET {where} with the first answer's id shows the message sent")
        how = "read back in the query" if carrier == "query" else "read back in the history's path"
        named = (("name", qname),) if carrier == "query" else ()
        query = "?" + urlencode({qname: sid})
        for key, value in (("in", carrier), *named, ("from", "answer"), ("id", id_path)):
            d.put("session", key, value, f"the first answer's {id_path} ({sid[:12]}...), {how}")
        chat = str(d.get("chat", "path")) + (query if carrier == "query" else "")
        # In the query alone, then in the body's field too (a path carrier's chat route, with no
        # {session} of its own, has only the body to carry it).
        for body_field in (None, name) if carrier == "query" else (name,):
            again = f"chaoslab init probe {secrets.token_hex(4)}"
            body = {d.get("chat", "message_field"): again, **({body_field: sid} if body_field else {})}
            c.call("POST", chat, body)
            if history_shape(c.call("GET", url)[2], again, None) is not None:
                if body_field:
                    d.put("session", "field", body_field, f"a second message with {body_field} in its body joined it")
                return sid
        d.missing(
            "session",
            "field",
            f"the message's field that carries the id back: a second message with "
            f"{'?' + qname + '= or ' if carrier == 'query' else ''}{{{name!r}: id}} started another conversation",
        )
        return sid
    return None


def _cookie(c: Client, d: Draft) -> str | None:
    jar = c.cookies()
    name = pick_cookie(sorted(jar))
    if name is None:
        if jar:
            d.missing("http", "cookie", f"which of the cookies {', '.join(sorted(jar))} is the session's")
        elif not d.get("session", "in"):
            d.missing("http", "cookie", "the session: the app set no cookie and no create call was found")
        return None
    d.put("http", "cookie", name, f"the app set it ({', '.join(sorted(jar))})")
    return jar[name]


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
