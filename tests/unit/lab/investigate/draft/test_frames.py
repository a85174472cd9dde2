"""lab init's reading of a page that chats over a plain WebSocket: the socket's URL and message
frame as the script writes them, and the frames that answered one message (pure)."""

from __future__ import annotations

from collections import Counter

from typing import Any

from lab.investigate.draft.frames import read_frames, sockets_in

# As an Express + ws app written without the lab writes its page (2026-12-06).
PAGE = """
  var proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
  ws = new WebSocket(proto + '//' + location.host + '/live?visitor=' + encodeURIComponent(visitor));
  ws.onmessage = function (ev) {
    var f = JSON.parse(ev.data);
    if (f.kind === 'piece') { pending.textContent += f.text; }
    else if (f.kind === 'complete') { pending = null; }
    else if (f.kind === 'fault') { addTurn('fault', 'Error: ' + f.why); }
  };
  ws.send(JSON.stringify({ kind: 'utter', body: text, visitor: visitor }));
"""


def test_the_socket_its_message_frame_and_the_kinds_the_page_handles() -> None:
    (sock,) = sockets_in(PAGE)
    assert sock.path == "/live?visitor={session}"
    assert sock.message == {"kind": "utter"} and sock.text_field == "body"  # the id's field is not the text's
    assert {("kind", "piece"), ("kind", "complete"), ("kind", "fault")} <= set(sock.kinds)
    # A template literal and a fixed URL; a switch over the frame's type.
    (t,) = sockets_in("const s = new WebSocket(`${base}/ws/${id}`); switch (m.type) {\n case 'delta': x();\n }")
    assert t.path == "/ws/{session}" and ("type", "delta") in t.kinds
    assert sockets_in("new WebSocket('ws://localhost:8000/chat')")[0].path == "/chat"
    assert sockets_in("fetch('/api/chat')") == []


def _frames(*kinds: str, **extra: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, k in enumerate(kinds):
        f: dict[str, Any] = {"kind": k}
        if k == "piece":
            f |= {"seq": i, "text": f"w{i} "}
        if k == "complete":
            f |= {"pieces": 3, **extra}
        out.append(f)
    return out


def test_the_frames_that_answered_give_the_fragment_its_text_the_end_and_the_error_not_seen() -> None:
    (sock,) = sockets_in(PAGE)
    got = read_frames(sock, _frames("piece", "piece", "piece", "complete"))
    assert got is not None
    assert (got.type_field, got.chunk, got.chunk_text, got.end) == ("kind", "piece", "$.text", "complete")
    assert got.ack is None and got.end_text is None and got.error == "fault" and got.reply == "w0 w1 w2 "
    # An acknowledgement before the first fragment; the end frame carrying the whole reply.
    acked = read_frames(sock, _frames("ack", "piece", "piece", "complete", reply="w1 w2 "))
    assert acked is not None and acked.ack == "ack" and acked.end_text == "$.reply"


def test_frames_that_cannot_be_told_apart_are_not_guessed() -> None:
    (sock,) = sockets_in(PAGE)
    assert read_frames(sock, [{"kind": "complete", "pieces": 0}]) is None  # no fragment with text
    assert read_frames(sock, [{"n": 1}, {"n": 2}]) is None  # no field names a kind
    assert read_frames(sock, []) is None


def test_a_socketio_page_s_message_and_the_events_it_listens_to() -> None:
    """socket.emit('user_message', {conv: convId, content: text}) (an Express app written unseen,
    2026-12-06): the event, the text's field and the id's; the app's events, not Socket.IO's own."""
    from lab.investigate.draft.frames import socketio_in

    script = """
      const socket = io();
      socket.on('connect', () => {});
      socket.on('assistant_delta', (m) => add(m.delta));
      socket.on('assistant_done', (m) => done(m.content));
      socket.on('server_error', (m) => fail(m.message));
      form.onsubmit = () => socket.emit('user_message', { conv: convId, content: text, v: "2" });
    """
    got = socketio_in(script)
    assert got is not None and got.event == "user_message"
    assert (got.text_field, got.id_field, got.message) == ("content", "conv", {"v": "2"})
    assert set(got.kinds) == {("event", "assistant_delta"), ("event", "assistant_done"), ("event", "server_error")}
    assert socketio_in("socket.emit('x', {a: b})") is None  # no io(): no Socket.IO page


def test_socketio_events_read_as_frames_name_the_chunk_the_end_and_the_error() -> None:
    from lab.investigate.draft.frames import Socket, read_frames

    kinds = Counter({("event", "assistant_delta"): 1, ("event", "assistant_done"): 1, ("event", "server_error"): 1})
    frames = [{"event": "assistant_delta", "conv": "u1", "delta": w} for w in ("You", " said", " hi")]
    frames.append({"event": "assistant_done", "conv": "u1", "content": "You said hi"})
    got = read_frames(Socket("", kinds=kinds), frames)  # type: ignore[arg-type]
    assert got is not None and (got.type_field, got.chunk, got.chunk_text) == ("event", "assistant_delta", "$.delta")
    assert (got.end, got.end_text, got.error, got.reply) == (
        "assistant_done",
        "$.content",
        "server_error",
        "You said hi",
    )
