"""A user's test's socket frames as sends (lab.investigate.plugin.frames): each message frame of
the spec's transport, answered by the frames after it on its own socket -- acknowledged at the
first fragment (or the app's ack), ended by the end frame; an error frame is no answer; a reply
the test never saw end is no answer either; the conversation's id from the message's field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.investigate.plugin import frames
from lab.investigate.plugin.frames import sends, sent_id
from lab.investigate.spec import parse as sp

ROOT = Path(__file__).resolve().parents[5]
SIO = sp.load(ROOT / "examples" / "node-sio-page.toml")  # user_message / assistant_delta / _done / server_error


def _ev(name: str, body: dict) -> str:  # type: ignore[type-arg]
    return "42" + json.dumps([name, body])


def test_socketio_messages_answered_by_the_frames_after_them_on_their_socket() -> None:
    frames = [
        (1.000, "sent", "40", "a"),  # the socket's own connect packet: no message
        (1.010, "sent", _ev("user_message", {"conv": "c-1", "content": "hello"}), "a"),
        (1.020, "received", _ev("assistant_delta", {"conv": "c-1", "delta": "hi"}), "b"),  # another socket
        (1.300, "received", _ev("assistant_delta", {"conv": "c-1", "delta": "Hi"}), "a"),
        (1.400, "received", _ev("assistant_done", {"conv": "c-1", "content": "Hi you"}), "a"),
        (2.000, "sent", _ev("user_message", {"conv": "c-2", "content": "again"}), "a"),
        (2.100, "received", _ev("server_error", {"conv": "c-2", "message": "could not store"}), "a"),
        (3.000, "sent", _ev("user_message", {"conv": "c-3", "content": 'say "third"'}), "a"),  # escaped in the frame
        (3.050, "received", _ev("assistant_delta", {"conv": "c-3", "delta": "T"}), "a"),
    ]
    got = sends(SIO, frames)
    assert [(s.text, s.outcome) for s in got] == [("hello", "ok"), ("again", "info"), ('say "third"', "ok")]
    first = got[0]
    assert first.reply == "Hi you" and first.ms == pytest.approx(290.0) and first.t_invoke == 1.010
    assert first.t_complete == 1.400
    assert got[1].reason.startswith("error frame: ")
    assert got[2].reason == "the test ended before the reply's end frame"
    assert sent_id(SIO, frames) == "c-3"
    assert sent_id(SIO, frames[:1]) is None


def test_websocket_messages_are_json_frames_carrying_the_message_field(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAT_USER", "ada")
    monkeypatch.setenv("CHAT_PASSWORD", "pw-0123456789")
    ws = sp.load(ROOT / "examples" / "fastapi-page.toml")  # {type: message, content}, ack / delta / done
    frames = [
        (1.0, "sent", json.dumps({"type": "ping"}), 1),
        (1.1, "sent", json.dumps({"type": "message", "content": "hello"}), 1),
        (1.2, "received", json.dumps({"type": "ack"}), 1),
        (1.5, "received", json.dumps({"type": "done", "reply": "Hi"}), 1),
    ]
    (s,) = sends(ws, frames)
    assert (s.text, s.outcome, s.reply, s.ms) == ("hello", "ok", "Hi", pytest.approx(100.0))


def test_a_streamed_answers_end_event_is_matched_to_its_send_by_the_requests_body() -> None:
    """The page hands over the moment a chat stream's body first held the spec's end event, with
    the request's body: the send with that body, made before it, was answered then."""
    sse = sp.load(ROOT / "examples" / "node-sse.toml")  # [stream] end = "data: [DONE]", no socket
    assert frames.watched(sse) and not frames.watched(sp.load(ROOT / "examples" / "foreign-app.toml"))
    log = [(10.5, "ended", '{"message": "a"}', "fetch"), (11.5, "ended", '{"message": "b"}', "fetch")]
    assert frames.stream_end(log, '{"message": "b"}', 11.0) == 11.5
    assert frames.stream_end(log, '{"message": "a"}', 11.0) is None  # an earlier send's, not this one's
    assert frames.stream_end(log, '{"message": "c"}', 0.0) is None


def test_a_streams_end_as_an_eventsource_event() -> None:
    """[stream] end read from an EventSource: "event: end" is the event named end; "data: [DONE]" a
    message of that data; anything else a message holding it."""
    from lab.investigate.plugin.frames import es_end

    assert es_end("event: end") == {"name": "end", "data": None, "within": None}
    assert es_end("data: [DONE]") == {"name": "message", "data": "[DONE]", "within": None}
    assert es_end('"type": "done"') == {"name": "message", "data": None, "within": '"type": "done"'}
