"""Where `lab init` finds a conversation's id, where no OpenAPI document says: a create call
(POST to a collection answering an id), an id the page mints itself (crypto.randomUUID(), kept
in localStorage, sent in a path, a query or the message's body), an id the first answer gives,
or a cookie the app sets -- and the id of a turn whose reply streams on a request of its own
([stream] follow). Each shape is drafted
only once a message sent with the id was taken (and, for an id from an answer, read back in the
same conversation); None: not this shape, nothing drafted."""

from __future__ import annotations

import re
import secrets
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlencode

from lab.investigate.draft.client import Client
from lab.investigate.draft.infer import (
    put_end_event,
    stream_type,
    Draft,
    an_id,
    answer_id,
    history_shape,
    key_glob,
    key_pattern,
    order_of_two,
    pick_cookie,
)
from lab.investigate.draft.routes import ID, QUERY_NAMES, Routes
from lab.investigate.spec.schema import MINTED
from lab.investigate.spec.shapes import page_url_pattern

# An id of each placeholder's kind, as the lab's page mints it (lab.investigate.browser.page_frames).
_MINT = {"{uuid}": lambda: str(uuid.uuid4()), "{random}": lambda: secrets.token_hex(16)}


def at(d: Draft, path: str, sid: str | None) -> str:
    """``path`` for the conversation ``sid`` as the draft carries it: a path segment, a query
    parameter, else the path as it is (a cookie, or no id yet)."""
    if d.get("session", "in") == "query" and sid:
        return f"{path}{'&' if '?' in path else '?'}{urlencode({d.get('session', 'name'): sid})}"
    return path.replace(ID, quote(sid or "", safe=""))


def carried(d: Draft, sid: str | None) -> dict[str, str]:
    """The body's field carrying an id the page made ([session] field, from = fixed), as the
    lab's page sends it with each message; {} where the draft has none."""
    field = d.get("session", "field")
    return {field: sid} if field and sid and d.get("session", "from") == "fixed" else {}


def _took(c: Client, url: str, page: Routes) -> bool:
    """A message POSTed to ``url`` was taken (2xx), under any of the fields the page sends."""
    return any(200 <= c.call("POST", url, {f: "chaoslab init probe"})[0] < 300 for f in page.message_fields())


def _place(d: Draft, chat: str, why: str, **session: str) -> None:
    """The session's fields and the chat's path, from ``chat`` (``/say/{session}`` or
    ``/api/chat?s={session}``)."""
    path, _, query = chat.partition("?")
    carrier = {"in": "query", "name": query.split("=")[0]} if query else {"in": "path"}
    for key, value in {**carrier, **session}.items():
        d.put("session", key, value, why)
    d.put("chat", "path", path, why)


def created(c: Client, d: Draft, page: Routes) -> str | None:
    """A create call no OpenAPI document names (REST apps in Express, Go, Rails): POST to a
    collection (/api/conversations ...) with no body answering an id ($.id, $.conversation_id
    ...), a message then taken by a route below it (<collection>/{session}/messages ...) or one
    the page sends it to in the query (/api/chat?s=...)."""
    made: dict[str, tuple[str, str] | None] = {}  # each collection POSTed once
    for path, chat in page.creates():
        if path not in made:
            status, _, doc = c.call("POST", path, {})
            made[path] = made_id(doc) if 200 <= status < 300 else None
        found = made[path]
        if found is not None and _took(c, chat.replace(ID, quote(found[1], safe="")), page):
            why = f"POST {path} answered {found[0]} ({found[1][:12]}...), and POST {chat} took a message"
            _place(d, chat, why, **{"from": "create", "create": path, "id": found[0]})
            return found[1]
    return None


def header_created(c: Client, d: Draft, page: Routes) -> str | None:
    """A create call whose id the page then sends in a header of its own (POST /api/session
    answering {"token"}, then X-Chat-Token on every call): a message taken with it there. The
    header stays set on the probe's client for the rest of it, as the page keeps sending it."""
    for made in page.posts(0, body=False):
        status, _, doc = c.call("POST", made, {})
        found = made_id(doc) if 200 <= status < 300 else None
        for chat, header in page.headered() if found is not None else []:
            assert found is not None
            c.headers[header] = found[1]
            if _took(c, chat, page):
                why = f"POST {made} answered {found[0]} ({found[1][:12]}...), and POST {chat} took a message with it in {header}"
                for key, value in {
                    "in": "header",
                    "name": header,
                    "from": "create",
                    "create": made,
                    "id": found[0],
                }.items():
                    d.put("session", key, value, why)
                d.put("chat", "path", chat, why)
                return found[1]
            del c.headers[header]
    return None


def made_id(doc: Any) -> tuple[str, str] | None:
    """A create call's answer's id: a field of its own, the object's id, else its one word that
    is not a time or a URL ({"room": "5f8c...", "idle_ttl": 2700}), or the same inside its one
    object ({"room": {"slug": ...}}: an Express app written unseen, 2026-12-06) -- confirmed only
    by a message then taken below it."""
    found = answer_id(doc) or (("$.id", str(doc["id"])) if isinstance(doc, dict) and an_id(doc.get("id")) else None)
    if found is not None or not isinstance(doc, dict):
        return found
    # A word, not a number beside it (a TTL's seconds, a count): an id of numbers is named id.
    words = [
        (k, v)
        for k, v in doc.items()
        if isinstance(v, str) and an_id(v) and not re.match(r"\d{4}-\d\d-\d\d|https?:", v)
    ]
    if len(words) == 1:
        return f"$.{words[0][0]}", words[0][1]
    # One object and nothing else to say ({"room": {"slug": ...}}): the same rules inside it.
    inner = [(k, v) for k, v in doc.items() if isinstance(v, dict)]
    if not words and len(inner) == 1 and (got := made_id(inner[0][1])) is not None:
        return f"$.{inner[0][0]}{got[0][1:]}", got[1]
    return None


def page_made(c: Client, d: Draft, page: Routes) -> str | None:
    """An id the page mints itself (crypto.randomUUID(), kept in localStorage) and sends in the
    chat's path or query, with no create call: a fresh id of the page's kind (a UUID, else 32 hex
    digits) must be taken there. Drafted as from = "fixed" with that kind's placeholder, which the
    lab's page fills fresh per browser."""
    if not (page.mints or page.page_url):
        return None
    chats = [*page.posts(1), *(f"{p}?{name}={ID}" for p, name in page.queried())]
    # A page at an id's URL (/ redirected to /c/8f3a): a route that takes any fresh id is drafted so.
    whose = "the page mints its ids (crypto.randomUUID())" if page.mints else f"the page's URL holds an id ({page.at})"
    for chat in chats:
        c.form = c.form or chat in page.forms
        for value in MINTED:
            sid = _MINT[value]()
            if _took(c, chat.replace(ID, sid), page):
                why = f"{whose}, and POST {chat} took a message under a fresh one"
                _place(d, chat, why, **{"from": "fixed", "value": value})
                return sid
    return _redirected(c, d, page, chats) if page.page_url else _in_body(c, d, page)


def _in_body(c: Client, d: Draft, page: Routes) -> str | None:
    """An id the page mints and sends in the message's body ({"thread": <uuid>, "prompt": ...}),
    reading the history by it in a path (/api/threads/{session}): a message with a fresh id of
    the page's kind in one of its fields, its text in another, taken and then shown by one of
    the page's reads under that id -- a cookie app taking any extra field shows nothing there."""
    if not page.mints or not page.gets(1):
        return None
    for chat in page.posts(0):
        for carrier in page.fields:
            for message in (m for m in page.message_fields() if m != carrier):
                for value in MINTED:
                    sid, text = _MINT[value](), f"chaoslab init probe {secrets.token_hex(4)}"
                    if not 200 <= c.call("POST", chat, {message: text, carrier: sid})[0] < 300:
                        continue
                    if (read := _shows(c, page.gets(1), sid, text)) is None:
                        continue
                    why = f"the page mints its ids, POST {chat} took a message with a fresh one in {carrier!r}, GET {read} showed it"
                    _place(d, chat, why, **{"from": "fixed", "value": value, "field": carrier})  # in = path
                    d.put("chat", "message_field", message, why)
                    return sid
    return None


def _shows(c: Client, reads: list[str], sid: str, text: str) -> str | None:
    """The first of ``reads`` (with {session}) that, under ``sid``, answers 2xx holding ``text``."""
    for path in reads:
        status, _, body = c.text(path.replace(ID, quote(sid, safe="")))
        if 200 <= status < 300 and text in body:
            return path
    return None


def _redirected(c: Client, d: Draft, page: Routes, chats: list[str]) -> str | None:
    """A page whose app made the id in its URL (/ redirected to /c/8f3a) and that takes no
    fresh id of the lab's (a server-rendered app checks its ids): each browser is given its own
    by the same redirect -- drafted as from = "redirect", the id read from where it led."""
    assert page.page_url is not None
    method, create = page.start
    if method == "GET":
        c.text(create)
    else:
        c.call("POST", create, {})
    if (m := re.match(page_url_pattern(page.page_url), c.path)) is None:
        return None
    for chat in chats:
        if _took(c, chat.replace(ID, m.group(1)), page):
            why = f"{method} {create} led to {c.path}, and POST {chat} took a message under that id (and no fresh one of the lab's)"
            _place(d, chat, why, **{"from": "redirect", "create": create, "page_url": page.page_url})
            if method != "GET":
                d.put("session", "create_method", method, why)
            return m.group(1)
    return None


def answered_id(c: Client, d: Draft, text: str, reply: str, answer: Any, page: Routes) -> str | None:
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
        (t.replace(ID, quote(sid, safe="")), t, "path", name) for t in page.conversations()
    ]
    for url, template, carrier, qname in tries:
        status, _, doc = c.call("GET", url)
        shape = history_shape(doc, text, reply or None) if 200 <= status < 300 else None
        if shape is None:
            continue
        where = f"{template}?{qname}=<id>" if carrier == "query" else template
        d.history(template, shape, f"GET {where} with the first answer's id shows the message sent")
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
            if (both := history_shape(doc := c.call("GET", url)[2], again, None)) is not None:
                if not reply:  # a streamed answer gave no reply to place: the two messages tell the order
                    order_of_two(d, doc, both.items, text, again)
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


def cookie(c: Client, d: Draft) -> str | None:
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


def key(
    d: Draft,
    text: str,
    sid: str | None,
    keys: Callable[[str], list[str]],
    pttl: Callable[[str], int],
    again: Callable[[], str | None] = lambda: None,
) -> None:
    """[redis] key: the key holding the message sent, named after the session -- else, where one
    key holds a second message too and its name has an id, that key's shape (`*`: found by what
    it holds). ``again``: send a second message, its text (None: it could not be sent)."""
    holding = keys(text)
    pattern = key_pattern(holding, sid) if sid else None
    if pattern and sid:
        d.put("redis", "key", pattern, "the key holding the message sent, named after the session")
        key: str | None = pattern.replace("{session}", sid)
    else:
        key = found_key(d, holding, keys, again) if holding else None
    if key is not None and pttl(key) == -1:
        # A run sees a TTL the app sets; one it never sets may be on purpose or forgotten.
        d.notes.append(
            "[redis] expires: the conversation's key has no TTL -- if conversations are meant to expire, "
            "add expires = true (a key with none is then a defect: no_ttl); expires = false says they are kept"
        )
    if key is None:  # optional: without it the lab reads no TTL and no raw values (fewer diagnoses)
        d.notes.append(
            "[redis] key: not inferred -- "
            + (
                f"the keys holding the message ({', '.join(holding[:3])}) are not named after the session, "
                "and no one of them holds a second message under a name with an id"
                if holding
                else "no key in the lab's Redis holds the message sent"
            )
            + "; without it, the TTL rules and history_hides_stored are not judged"
        )


def found_key(
    d: Draft, holding: list[str], keys: Callable[[str], list[str]], again: Callable[[], str | None]
) -> str | None:
    """The one key holding a second message too, drafted with its id parts as `*`; None where
    none or several do (a key a message, an index beside them) or its name has no id."""
    second = again()
    both = [k for k in keys(second) if k in holding] if second else []
    glob = key_glob(both[0]) if len(both) == 1 else None
    if glob is None:
        return None
    d.put(
        "redis",
        "key",
        glob,
        f"the one key holding both messages sent ({both[0]}), its id not the session's as the lab sees it: "
        "`*`, a trial's key is the one of this shape holding its messages",
    )
    return both[0]


def reply_stream(c: Client, d: Draft, doc: Any, page: Routes) -> bool:
    """[stream] follow: the message answered at once (``doc``: 202 {"turn": "9f3a"}, no reply in
    it) and the reply streamed on one of the page's GETs taking that id (an EventSource) -- read
    to its end: an app that makes its reply only when asked stores it only then."""
    found = made_id(doc)
    if found is None:
        return False
    id_path, turn = found
    for path in page.gets(1):
        status, ctype, _ = c.call("GET", path.replace(ID, turn))
        if 200 <= status < 300 and (streamed := stream_type(ctype, c.chunked)):
            named = path.replace(ID, "{turn}")
            why = f"the message's answer gave {id_path} ({turn[:12]}), and GET {named} with it streamed ({streamed})"
            d.put("stream", "request", {}, why)
            d.put("stream", "follow", named, why)
            d.put("stream", "follow_id", id_path, why)
            put_end_event(d, c.body)
            return True
    return False
