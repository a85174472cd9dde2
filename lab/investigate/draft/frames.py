"""Where `lab init` drafts [transport] for a page that chats over a plain WebSocket: the socket's
URL and the message frame as the page's script writes them (``new WebSocket(...)``,
``ws.send(JSON.stringify({kind: "say", body: text}))``) and the frame kinds it handles
(``f.kind === "piece"``, ``case "done":``); then one real message sent on that socket, and the
frames that answer it read: the field that tells them apart, the reply's fragment and its text,
the frame that ends the reply (and the whole reply in it), and the error frame the script handles
that did not come; a frame before the first fragment is named in a note, never drafted as the
app's acknowledgement (it may say "received", not "stored"). Read, never run; a socket
whose frames cannot be told apart is left to the user (COULD NOT INFER), never guessed."""

from __future__ import annotations

import json
import re
import secrets
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from lab.investigate.draft.client import Client
from lab.investigate.draft.infer import Draft
from lab.investigate.draft.routes import ID, first_argument, defined_as, literal_text, plus_parts, STRING

_SOCKET = re.compile(r"\bnew\s+WebSocket\s*\(")
_SEND = re.compile(r"\.send\s*\(\s*JSON\.stringify\s*\(\s*\{([^{}]*)\}")
_PAIR = re.compile(r"[\"']?([A-Za-z_$][\w$]*)[\"']?\s*:\s*([^,]+)")
_COMPARED = re.compile(r"\b[A-Za-z_$][\w$]*\.([A-Za-z_$][\w$]*)\s*===?\s*[\"']([\w.:-]+)[\"']")
_SWITCH = re.compile(r"switch\s*\(\s*[A-Za-z_$][\w$]*\.([A-Za-z_$][\w$]*)\s*\)\s*\{(.*?)\n\s*\}", re.S)
_CASE = re.compile(r"case\s+[\"']([\w.:-]+)[\"']\s*:")
_ERRORISH = re.compile(r"(?i)err|fail|fault|oops|problem")
_ID_NAMES = re.compile(
    r"(?i)^(id|sid|cid|conv|session\w*|visitor\w*|conversation\w*|thread\w*|room\w*|chat_?id|token|user_?id)$"
)
_EMIT = re.compile(r"\.emit\s*\(\s*[\"']([\w.:-]+)[\"']\s*,\s*\{([^{}]*)\}")
_ON = re.compile(r"\.on\s*\(\s*[\"']([\w.:-]+)[\"']")
_IO = re.compile(r"\bio\s*\(")
# Socket.IO's own events, never the app's reply.
SIO_OWN = {"connect", "disconnect", "connect_error", "reconnect", "reconnect_attempt", "error", "ping"}
QUIET_S = 3.0  # no frame this long after the last: the answer is over
ANSWER_S = 20.0  # at most this long for the whole answer
CONNECT_S = 5.0


@dataclass
class Socket:
    """A plain WebSocket the page opens, as its script writes it."""

    path: str  # /live?visitor={session}
    message: dict[str, str] = field(default_factory=dict)  # the sent frame's literal fields
    text_field: str | None = None  # the sent frame's field carrying the user's text
    kinds: Counter[tuple[str, str]] = field(default_factory=Counter)  # (field, value) the script tests


def sockets_in(script: str) -> list[Socket]:
    """The WebSockets a page's script opens, their message frame and the kinds it handles (pure)."""
    out = []
    for m in _SOCKET.finditer(script):
        arg, _ = first_argument(script, m.end())
        url = "".join(literal_text(p) for p in plus_parts(defined_as(script, arg.strip())))
        # The scheme and host dropped, or a base the script names (`${base}/ws`, wsUrl + "/chat").
        path = re.sub(r"^[^/]*//[^/]*", "", url) if "//" in url else re.sub(r"^\{session\}(?=/)", "", url)
        if path.startswith("/") and not path.startswith("/" + ID):
            out.append(Socket(re.sub(r"(\{session\})+", ID, path)))
    if not out:
        return []
    sent = _SEND.search(script)
    for name, value in _PAIR.findall(sent.group(1) if sent else ""):
        if STRING.fullmatch(value.strip()):
            out[0].message[name] = value.strip()[1:-1]
        elif out[0].text_field is None and not _ID_NAMES.match(name):
            out[0].text_field = name
    out[0].kinds.update(_COMPARED.findall(script))
    for name, body in _SWITCH.findall(script):
        out[0].kinds.update((name, v) for v in _CASE.findall(body))
    return out


@dataclass
class Emitted:
    """A Socket.IO message as the page's script emits it: its event, the payload's literal fields,
    the field carrying the user's text and the one carrying the conversation's id."""

    event: str
    message: dict[str, str] = field(default_factory=dict)
    text_field: str | None = None
    id_field: str | None = None
    kinds: Counter[tuple[str, str]] = field(default_factory=Counter)  # ("event", name) it listens to


def socketio_in(script: str) -> Emitted | None:
    """The page's Socket.IO message (``socket.emit("say", {conv: id, content: text})``) and the
    events it listens to (``socket.on("delta", ...)``) -- pure; None: no io() and emit."""
    if not _IO.search(script):
        return None
    for event, body in _EMIT.findall(script):
        got = Emitted(event)
        for name, value in _PAIR.findall(body):
            if STRING.fullmatch(value.strip()):
                got.message[name] = value.strip()[1:-1]
            elif _ID_NAMES.match(name) or _ID_NAMES.match(value.strip().split(".")[-1]):
                got.id_field = got.id_field or name
            elif got.text_field is None:
                got.text_field = name
        if got.text_field is not None:
            got.kinds.update(("event", n) for n in _ON.findall(script) if n not in SIO_OWN)
            return got
    return None


@dataclass
class Reading:
    """What the frames that answered one message say, for the spec's [transport]."""

    type_field: str
    chunk: str
    chunk_text: str
    end: str
    ack: str | None = None
    end_text: str | None = None
    error: str | None = None
    reply: str = ""


def read_frames(sock: Socket, after: list[dict[str, Any]]) -> Reading | None:
    """The frames received after the message, read (pure); None: they cannot be told apart."""
    compared = Counter(f for f, _ in sock.kinds.elements())
    keys = [k for k in (after[0] if after else {}) if all(isinstance(f.get(k), str) for f in after)]
    typed = sorted(keys, key=lambda k: (-compared[k], len({f[k] for f in after}) == 1))
    if not typed:
        return None
    tf = typed[0]
    kinds = [f[tf] for f in after]
    end = kinds[-1]
    texts = {
        k: [f for f in after if f[tf] == k]
        for k in dict.fromkeys(kinds)
        if k != end and any(_text_key(f, tf) for f in after if f[tf] == k)
    }
    if not texts:
        return None
    chunk = max(texts, key=lambda k: len(texts[k]))
    text_key = _text_key(texts[chunk][0], tf)
    assert text_key is not None
    reply = "".join(str(f.get(text_key, "")) for f in texts[chunk])
    first = kinds.index(chunk)
    ack = next((k for k in kinds[:first] if kinds.count(k) == 1 and k != end), None)
    whole = next(
        (k for k, v in after[-1].items() if k != tf and isinstance(v, str) and v.strip() == reply.strip()), None
    )
    seen = set(kinds)
    error = next((v for f, v in sock.kinds if f == tf and v not in seen and _ERRORISH.search(v)), None)
    return Reading(tf, chunk, f"$.{text_key}", end, ack, whole and f"$.{whole}", error, reply)


def _text_key(frame: dict[str, Any], type_field: str) -> str | None:
    """The field of a frame that carries text (not its kind, not an id or a number)."""
    return next(
        (k for k, v in frame.items() if k != type_field and isinstance(v, str) and not _ID_NAMES.match(k)), None
    )


def converse(
    base_url: str, sock: Socket, sid: str, text: str, headers: dict[str, str] | None = None
) -> list[dict[str, Any]] | None:
    """One message on the socket, and the JSON frames that answered it until it went quiet
    (None: no socket, or no frame came). ``headers``: the page's cookies (and a login's token),
    as the browser sends them with the handshake. Bounded by CONNECT_S, QUIET_S and ANSWER_S."""
    from websockets.exceptions import WebSocketException
    from websockets.sync.client import connect

    url = "ws" + base_url.removeprefix("http") + sock.path.replace(ID, sid)
    field_ = sock.text_field or "text"
    frames: list[dict[str, Any]] = []
    try:
        with connect(url, additional_headers=headers or {}, open_timeout=CONNECT_S, close_timeout=1) as ws:
            _drain(ws, 0.5)  # a greeting on connect is no answer
            ws.send(json.dumps({**sock.message, field_: text}))
            first = _drain(ws, ANSWER_S, QUIET_S, frames)
    except (OSError, TimeoutError, WebSocketException):
        return None
    return frames if first else None


def _drain(ws: Any, total_s: float, quiet_s: float | None = None, into: list[dict[str, Any]] | None = None) -> bool:
    """Read frames for ``total_s`` (after the first, until ``quiet_s`` passes with none);
    whether any came."""
    deadline, got = time.monotonic() + total_s, False
    while (left := deadline - time.monotonic()) > 0:
        try:
            raw = ws.recv(timeout=min(left, quiet_s) if got and quiet_s else left)
        except TimeoutError:
            break
        got = True
        try:
            doc = json.loads(raw)
        except (TypeError, ValueError):
            continue
        if into is not None and isinstance(doc, dict):
            into.append(doc)
    return got


def draft(
    d: Draft, base_url: str, socks: list[Socket], mints: bool, headers: dict[str, str] | None = None
) -> tuple[str | None, str, str] | None:
    """[transport] and [chat] message_field from one message on the page's socket: (the id its
    URL carried, None where it carries none -- a cookie's conversation --, the message's text,
    the reply) where the frames could be read; None: no socket answered, or its frames could not
    be told apart (said in the draft)."""
    for sock in socks:
        sid = str(uuid.uuid4()) if mints else secrets.token_hex(16)
        text = f"chaoslab init probe {secrets.token_hex(4)}"
        frames = converse(base_url, sock, sid, text, headers)
        if frames is None:
            continue
        got = read_frames(sock, frames)
        if got is None:
            kinds = sorted({str(v) for f in frames for v in f.values() if isinstance(v, str)})[:6]
            d.missing(
                "transport",
                "chunk",
                f"the reply's fragment frame: frames came back ({', '.join(kinds)}) but none reads as one",
            )
            return None
        why = f"the page opens a WebSocket at {sock.path}; a message on it was answered by {len(frames)} frames"
        spec: dict[str, Any] = {"kind": "websocket", "path": sock.path, "message": sock.message}
        spec["type_field"] = got.type_field
        spec |= {"chunk": got.chunk, "chunk_text": got.chunk_text, "end": got.end}
        spec |= {"end_text": got.end_text, "error": got.error}
        for key, value in spec.items():
            if value not in (None, {}):
                d.put("transport", key, value, why)
        d.put("chat", "message_field", sock.text_field or "text", "the page's message frame carries the text there")
        if got.ack is not None:
            # Seen is not meant: a frame before the reply may say "received", not "stored" (a Go
            # app written unseen sends "got" at once and stores at the end: drafted as its ack,
            # acked_too_fast 16/16 on the correct app, 2026-12-06). The user says which.
            d.notes.append(
                f"[transport] ack: a {got.ack!r} frame came before the reply; if it is the app's word that the "
                f"message is stored, add ack = {got.ack!r} (a send then counts as acknowledged when it comes)"
            )
        if got.error is None:
            d.notes.append(
                "[transport] error: the page handles no error frame the lab could name; add it if the app sends one"
            )
        return (sid if ID in sock.path else None), text, got.reply
    return None


def sio_converse(
    base_url: str, emitted: Emitted, sid: str, text: str, headers: dict[str, str] | None = None
) -> list[dict[str, Any]] | None:
    """One message emitted over Socket.IO (Engine.IO 4 on its WebSocket transport, the default
    /socket.io/ path), and the events that answered it as frames ({"event": name, **payload});
    None: no connection, or no event came. Bounded like ``converse``."""
    from websockets.exceptions import WebSocketException
    from websockets.sync.client import connect

    url = "ws" + base_url.removeprefix("http") + "/socket.io/?EIO=4&transport=websocket"
    payload = {**emitted.message, (emitted.text_field or "text"): text}
    if emitted.id_field:
        payload[emitted.id_field] = sid
    frames: list[dict[str, Any]] = []
    try:
        with connect(url, additional_headers=headers or {}, open_timeout=CONNECT_S, close_timeout=1) as ws:
            ws.recv(timeout=CONNECT_S)  # the Engine.IO open packet
            ws.send("40")  # the default namespace
            ws.recv(timeout=CONNECT_S)  # its connect packet
            ws.send("42" + json.dumps([emitted.event, payload]))
            deadline, quiet = time.monotonic() + ANSWER_S, ANSWER_S
            while (left := deadline - time.monotonic()) > 0:
                raw = ws.recv(timeout=min(left, quiet))
                if raw == "2":  # the server's ping
                    ws.send("3")
                elif isinstance(raw, str) and raw.startswith("42"):
                    name, *args = json.loads(raw[2:])
                    arg = args[0] if args else None
                    frames.append({"event": name, **(arg if isinstance(arg, dict) else {"data": arg})})
                    quiet = QUIET_S
    except (OSError, TimeoutError, ValueError, WebSocketException):
        pass
    return frames or None


def draft_socketio(
    d: Draft, base_url: str, script: str, headers: dict[str, str] | None = None
) -> tuple[str, str, str] | None:
    """[transport] (kind socketio) and [chat] message_field from one message emitted as the
    page's script emits it: (the id sent in its payload, the text, the reply); None where the
    script names no message or its events cannot be read (the draft still asks)."""
    emitted = socketio_in(script)
    if emitted is None:
        return None
    sid, text = str(uuid.uuid4()), f"chaoslab init probe {secrets.token_hex(4)}"
    frames = sio_converse(base_url, emitted, sid, text, headers)
    got = read_frames(Socket("", kinds=emitted.kinds), frames) if frames else None
    if got is None or got.type_field != "event":
        return None
    why = f"the page emits {emitted.event!r}; a message emitted so was answered by {len(frames or [])} events"
    spec: dict[str, Any] = {
        "event": emitted.event,
        "message": emitted.message,
        "chunk": got.chunk,
        "chunk_text": got.chunk_text,
    }
    spec |= {"end": got.end, "end_text": got.end_text, "error": got.error}
    for key, value in spec.items():
        if value not in (None, {}):
            d.put("transport", key, value, why)
    d.put("chat", "message_field", emitted.text_field, "the page's emitted message carries the text there")
    if emitted.id_field:
        d.put("session", "field", emitted.id_field, "the page's emitted message carries the conversation's id there")
    if got.ack is not None:
        d.notes.append(
            f"[transport] ack: a {got.ack!r} event came before the reply; if it is the app's word that the "
            f"message is stored, add ack = {got.ack!r}"
        )
    return sid, text, got.reply


def socketio(c: Client, d: Draft) -> None:
    """A Socket.IO app (its client script served): the events a message and its reply go by are
    the app's code's, which the lab cannot see -- asked."""
    status, ctype, _ = c.call("GET", "/socket.io/socket.io.js")
    if status == 200 and "javascript" in ctype:
        d.put("transport", "kind", "socketio", "the app serves /socket.io/socket.io.js")
        for key, need in (
            ("event", "the event a message is emitted as"),
            ("chunk", "the event carrying a piece of the reply"),
            ("end", "the event that ends a reply"),
        ):
            d.missing(
                "transport", key, need + " (the app's Socket.IO code names it; the lab cannot see it from outside)"
            )
        d.missing("chat", "message_field", "the message's field in that event's payload")


def handshake(c: Client) -> dict[str, str]:
    """What a browser's WebSocket handshake carries: the app's cookies, a login's token."""
    jar = "; ".join(f"{k}={v}" for k, v in c.cookies().items())
    return {**c.headers, **({"Cookie": jar} if jar else {})}
