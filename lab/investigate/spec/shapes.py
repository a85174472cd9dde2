"""The spec's sections for apps shaped unlike a cookie + JSON-over-POST backend: [session]
(where the conversation's id lives and where it comes from), [auth] (a login, or a static
header) and [transport] (replies over a WebSocket or Socket.IO)."""

from __future__ import annotations

import os
import re
from urllib.parse import quote
from typing import Any

from lab.common.errors import UsageError
from lab.investigate.spec.fields import JSON_PATH, URL_PATH, bad, table, text
from lab.investigate.spec.schema import Auth, Session, Stream, Transport

CARRIERS = ("cookie", "header", "query", "path")
SOURCES = ("cookie", "create", "answer", "fixed", "redirect")
TRANSPORTS = ("websocket", "socketio")
_NAME = re.compile(r"^[!#-'*+\-.0-9A-Z^-z|~]+$")  # an HTTP token: a cookie's or a header's name
_ENV = re.compile(r"\{env:([A-Za-z_][A-Za-z0-9_]*)\}")


def _one_of(t: dict[str, Any], section: str, key: str, default: str, valid: tuple[str, ...]) -> str:
    v = text(t, section, key, default=default, expected=f"one of {', '.join(valid)}")
    if v not in valid:
        raise bad(f"{section}.{key}", v, f"one of {', '.join(valid)}")
    return str(v)


def session(data: dict[str, Any], cookie: str | None, paths: tuple[str, ...], page: bool = False) -> Session:
    """[session], or the session cookie of [http] cookie (the shape before [session] existed).
    ``paths``: the chat's and history's paths, which must hold {session} when the id is a path
    segment (and must not otherwise)."""
    if "session" not in data:
        if cookie is None:
            raise bad("http.cookie", None, "the session cookie's name, or a [session] section (required)")
        return Session("cookie", cookie, "cookie")
    s = table(data, "session")
    carrier = _one_of(s, "session", "in", "cookie", CARRIERS)
    source = _one_of(s, "session", "from", "cookie" if carrier == "cookie" else "create", SOURCES)
    name = text(s, "session", "name", default=cookie if carrier == "cookie" else None, pattern=_NAME, expected="a name")
    if carrier != "path" and not name:
        raise bad("session.name", None, f"the {carrier}'s name (required with in = {carrier!r})")
    if (source == "cookie") != (carrier == "cookie"):
        raise bad("session.from", source, "cookie exactly when in = 'cookie' (an app's cookie comes from the app)")
    out = Session(
        carrier,
        name or "",
        source,
        create_path=text(
            s,
            "session",
            "create",
            pattern=URL_PATH,
            expected="the path a POST creates it at (from = redirect: the path a GET is redirected from)",
        ),
        id_path=text(s, "session", "id", pattern=JSON_PATH, expected="a JSON path like $.id"),
        value=text(s, "session", "value", expected="the fixed id"),
        field=text(s, "session", "field", expected="a JSON field name"),
        page_storage=text(s, "session", "page_storage", expected="the app page's localStorage key holding the id"),
        create_method=text(
            s, "session", "create_method", default="GET", pattern=re.compile(r"^(GET|POST)$"), expected="GET or POST"
        ),
        page_url=text(
            s,
            "session",
            "page_url",
            pattern=re.compile(r"^/[^{}\s]*\{session\}[^{}\s]*$"),
            expected="the app page's URL path with {session}, e.g. /c/{session}",
        ),
    )
    _where_from(out, page)
    placed = [p for p in paths if "{session}" in p]
    # The history names the conversation in its path; the chat route too, unless the message's
    # body carries the id ([session] field: POST /api/chat {conversation_id, ...}).
    unplaced = [p for k, p in enumerate(paths) if "{session}" not in p and not (k > 0 and out.field)]
    if carrier == "path" and unplaced:
        raise bad(
            "chat.path / history.path",
            paths,
            "paths holding {session} (with [session] in = 'path'; the chat's may leave it out where [session] "
            "field carries the id in the message's body)",
        )
    if carrier != "path" and placed:
        raise bad("chat.path / history.path", placed[0], "no {session} unless [session] in = 'path'")
    return out


def _where_from(out: Session, page: bool) -> None:
    """What the session's source needs besides its name: where the app's page keeps the id, the
    create call's path, the fixed value, the id's place in an answer."""
    carrier, source = out.carrier, out.source
    if page and carrier != "cookie" and not (out.page_storage or out.page_url):
        raise bad(
            "session.page_storage / session.page_url",
            None,
            "where the app's own page keeps the id ([page] drives it): a localStorage key, or a URL like /c/{session}",
        )
    # redirect: a GET of `create` leads to page_url, the id in its path (a server-rendered app's / -> /c/<id>)
    needs = {
        "create": ("create", out.create_path),
        "fixed": ("value", out.value),
        "redirect": ("create", out.create_path),
    }
    if source == "redirect" and (carrier != "path" or out.page_url is None):
        raise bad(
            "session.page_url",
            out.page_url,
            "the page a redirect leads to, e.g. /c/{session} (from = 'redirect' needs in = 'path')",
        )
    if source in needs and needs[source][1] is None:
        raise bad(f"session.{needs[source][0]}", None, f"a value (required with from = {source!r})")
    if source in ("create", "answer") and out.id_path is None:
        raise bad("session.id", None, f"where the id is in the {source} response, e.g. $.id (required)")


def auth(data: dict[str, Any]) -> Auth | None:
    """[auth]: login = "/api/login" with body = {user = "{env:CHAT_USER}", ...} and token =
    "$.token" (omit token: the login sets a cookie), or header_env = "CHAT_API_KEY"."""
    if "auth" not in data:
        return None
    a = table(data, "auth")
    login = text(a, "auth", "login", pattern=URL_PATH, expected="the login request's path")
    header_env = text(a, "auth", "header_env", pattern=re.compile(r"^[A-Za-z_]\w*$"), expected="a variable's name")
    if (login is None) == (header_env is None):
        raise bad("auth", sorted(a), "login = PATH (a login request) or header_env = NAME (a static header), one")
    body = a.get("body", {})
    if not isinstance(body, dict) or not all(isinstance(v, str) for v in body.values()):
        raise bad("auth.body", body, 'a table of JSON fields, e.g. { password = "{env:CHAT_PASSWORD}" }')
    envs = tuple(dict.fromkeys([n for v in body.values() for n in _ENV.findall(v)] + [header_env or ""]))
    envs = tuple(e for e in envs if e)
    missing = [e for e in envs if not os.environ.get(e)]
    if missing:
        raise UsageError(
            f"target spec: [auth] needs the environment variable {missing[0]}, which is not set",
            f"export {missing[0]}=... before the run (its value is redacted from every report)",
        )
    return Auth(
        login,
        dict(body),
        text(a, "auth", "token", pattern=JSON_PATH, expected="a JSON path like $.token"),
        text(a, "auth", "header", default="Authorization", pattern=_NAME, expected="a header's name"),
        text(a, "auth", "scheme", default="Bearer", expected='a prefix like "Bearer" ("" for none)'),
        header_env,
        envs,
    )


def login_body(a: Auth) -> dict[str, str]:
    """The login's JSON body with its {env:NAME} values filled (secrets: never log this)."""
    return {k: _ENV.sub(lambda m: os.environ.get(m.group(1), ""), v) for k, v in a.body.items()}


def transport(data: dict[str, Any]) -> Transport | None:
    """[transport] kind = "websocket" | "socketio", with the frames that carry a reply."""
    if "transport" not in data:
        return None
    t = table(data, "transport")
    kind = _one_of(t, "transport", "kind", "websocket", TRANSPORTS)
    sio = kind == "socketio"
    message = t.get("message", {})
    if not isinstance(message, dict):
        raise bad("transport.message", message, 'a table of fields merged into the message frame, e.g. { type = "m" }')
    if sio and "page" in data:
        raise bad(
            "transport.kind",
            kind,
            "websocket with [page] (the app's own Socket.IO page starts on long-polling, which the lab does not "
            "watch yet): drive a Socket.IO app through the lab's page (omit [page])",
        )
    frame = "an event's name" if sio else "a frame's kind (its type_field value)"
    return Transport(
        kind,
        text(
            t,
            "transport",
            "path",
            default="/socket.io/" if sio else None,
            required=not sio,
            pattern=URL_PATH,
            expected="a path starting with / ({session} and {token} are filled in)",
        ),
        text(t, "transport", "event", default="message", expected="the event the message is emitted as"),
        dict(message),
        text(t, "transport", "type_field", default="type", expected="a JSON field name"),
        text(t, "transport", "ack", expected=frame),
        text(t, "transport", "chunk", required=True, expected=frame),
        text(t, "transport", "chunk_text", default="$.text", pattern=JSON_PATH, expected="a JSON path like $.text"),
        text(t, "transport", "end", required=True, expected=frame),
        text(t, "transport", "end_text", pattern=JSON_PATH, expected="a JSON path like $.reply"),
        text(t, "transport", "error", expected=frame),
        text(
            t,
            "transport",
            "client_script",
            default="/socket.io/socket.io.js",
            pattern=URL_PATH,
            expected="the Socket.IO client's path on the app",
        ),
    )


def page_url_pattern(page_url: str | None) -> str:
    """A regular expression (Python's and JavaScript's alike) of a page's path with {session} as
    its one group: the id read from where a redirect led ([session] from = "redirect")."""
    if not page_url:
        return "(?!)"
    return "^" + re.escape(page_url).replace(re.escape("{session}"), "([^/?#]+)") + "/?$"


def follow_pattern(follow: str | None, turn: object = None) -> re.Pattern[str] | None:
    """[stream] follow's path as a pattern: {session} any one segment, {turn} too -- or ``turn``,
    where given (the turn a chat's answer named, as its URL carries it)."""
    if follow is None:
        return None
    any_segment = "[^/?#]+"
    turn_segment = any_segment if turn is None else re.escape(quote(str(turn), safe=""))
    return re.compile(
        "^"
        + re.escape(follow).replace(re.escape("{turn}"), turn_segment).replace(re.escape("{session}"), any_segment)
        + "$"
    )


def stream(data: dict[str, Any]) -> Stream | None:
    """[stream]: how an answer streams, its end event, the request its reply streams on."""
    if "stream" not in data:
        return None
    st = table(data, "stream")
    request = st.get("request", {})
    if not isinstance(request, dict) or not all(isinstance(k, str) for k in request):
        raise bad(
            "stream.request",
            request,
            "a table of JSON fields that ask for a streamed "
            "answer, e.g. { stream = true } ({} if every answer streams)",
        )
    end = text(st, "stream", "end", expected='the last event\'s text, e.g. "event: done"')
    if end is not None and not end.strip():
        raise bad("stream.end", end, 'the text of the last event of a completed reply, e.g. "event: done"')
    follow = text(st, "stream", "follow", pattern=FOLLOW_PATH, expected="a path starting with / holding {turn}")
    follow_id = text(st, "stream", "follow_id", default="$.id", pattern=JSON_PATH, expected="a JSON path like $.turn")
    if follow is not None and "page" in data:
        raise bad(
            "stream.follow",
            follow,
            "no [page] beside it: the lab's own page follows a reply's stream; the app's own page is "
            "read by its chat request's answer (drop [page] to investigate this app)",
        )
    return Stream(dict(request), end, follow, str(follow_id))


FOLLOW_PATH = re.compile(r"^/\S*\{turn\}\S*$")  # the reply's stream, {turn} from the chat's answer
