"""A cut mid-reply judged from the browser's network: the end seen before the close, or a cut
too late into the reply to be told from its end."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.investigate.browser.cut import Span, judge, stored_before
from lab.model.history import Row, Send, Trial

ROOT = Path(__file__).resolve().parents[5]
EARLIER = [Span(10.0, 10.2), Span(20.0, 20.25)]  # replies streamed whole in 200 and 250 ms


def test_a_close_early_in_the_reply_tested_the_window() -> None:
    assert judge(Span(30.0, None, 30.05), EARLIER, "done frame") is None


def test_the_end_before_the_close_missed_it() -> None:
    assert judge(Span(30.0, 30.2, 30.3), EARLIER, "done frame") == (
        "the reply's done frame reached the browser before the cut closed its connection: "
        "the mid-stream window was not tested"
    )


def test_the_end_and_no_close_missed_it() -> None:
    assert judge(Span(30.0, 30.2, None), [], "whole streamed answer") is not None


def test_a_close_half_way_through_the_shortest_reply_is_too_late_to_tell() -> None:
    why = judge(Span(30.0, None, 30.1), EARLIER, "done frame")
    assert why == (
        "the cut closed the connection 100 ms into the reply, while the shortest earlier reply took "
        "200 ms to end: it may have come after this reply's end (the mid-stream window was not tested; "
        "a busy machine reacts late)"
    )


def test_replies_that_stream_whole_at_once_leave_no_window() -> None:
    why = judge(Span(30.0, None, 30.001), [Span(10.0, 10.005)], "done frame")
    assert why is not None and why.startswith("the earlier replies streamed whole in 5 ms")


def test_no_earlier_reply_or_no_close_seen_leaves_the_pages_claim() -> None:
    assert judge(Span(30.0, None, 30.5), [], "done frame") is None
    assert judge(Span(30.0, None, None), EARLIER, "done frame") is None
    assert judge(Span(None, None, 30.5), EARLIER, "done frame") is None


def _cut_trial(final: list[tuple[str, str]]) -> Trial:
    sends = [Send(f"m{i}", f"question {i}", i, reply=f"answer {i}") for i in (1, 2)]
    sends[-1].cut = True
    return Trial("t", sends=sends, final_rows=[Row("", role, text) for role, text in final])


WHOLE = [("user", "question 1"), ("assistant", "answer 1"), ("user", "question 2"), ("assistant", "answer 2")]


def test_a_reply_the_store_held_before_the_cut_missed_the_window() -> None:
    """The key held at the cut's reload all it holds in the end, the cut turn's reply included:
    the app had finished before the cut."""
    values = [b"u1", b"a1", b"u2", b"a2"]
    why = stored_before(values, list(values), _cut_trial(WHOLE))
    assert why is not None and "the mid-stream window was not tested" in why


def test_a_reply_written_after_the_cut_or_never_is_judged() -> None:
    # Written after the reload began (a correct app finishing the reply the client left).
    assert stored_before([b"u1", b"a1", b"u2"], [b"u1", b"a1", b"u2", b"a2"], _cut_trial(WHOLE)) is None
    # Never written (the bug the cut exposes): the same key before and after, no reply shown.
    same = [b"u1", b"a1", b"u2"]
    assert stored_before(same, list(same), _cut_trial(WHOLE[:3])) is None


def _lab_cut(
    written_after_start_s: float | None, abort_after_start_s: float = 0.2, earlier_reply_s: float = 0.05
) -> Trial:
    """The lab page's cut of turn 2: its request left at 2.0, its first chunk came at 2.05, the
    abort at 2.20 (or ``abort_after_start_s``); the turn first written ``written_after_start_s``
    after 2.0 (None: never). Turn 1's reply streamed ``earlier_reply_s`` from first chunk to end."""
    t0 = 1_800_000_000.0
    sends = []
    for turn in (1, 2):
        s = Send(f"t{turn}", f"chaoslab probe cut turn {turn} ef56", turn, streamed=True, t_invoke=t0 + turn, ms=50.0)
        s.cut = turn == 2
        s.complete("ok", 200, "", t0 + turn + (abort_after_start_s if turn == 2 else 0.05 + earlier_reply_s))
        sends.append(s)
    store = [{"t": t0 + 1.05, "conn": "c1", "cmd": "RPUSH", "args": [], "write": True, "user": [1], "reply": []}]
    if written_after_start_s is not None:
        w = {"t": t0 + 2 + written_after_start_s, "conn": "c1", "cmd": "RPUSH", "args": [], "write": True}
        store.append({**w, "user": [2], "reply": []})
    return Trial("c", sends=sends, store=store, refresh="mid_stream", turns=2)


def test_a_turn_stored_between_the_first_chunk_and_the_abort_was_a_finished_stream() -> None:
    from lab.investigate.browser.cut import finished_before_cut

    why = finished_before_cut(_lab_cut(0.10))  # after the first chunk (2.05), before the abort (2.20)
    assert why is not None and "stored 100 ms before the cut's abort" in why, why
    assert finished_before_cut(_lab_cut(0.01)) is None  # stored before its first chunk: stores, then streams
    assert finished_before_cut(_lab_cut(0.50)) is None  # after the abort: it went on when the client left
    near = finished_before_cut(_lab_cut(0.205))  # 5 ms after the abort: not to be ordered against it
    assert near is not None and "within the clock's grain" in near, near
    assert finished_before_cut(_lab_cut(None)) is None  # never stored: the cut is the loss, judged


def test_a_turn_stored_within_the_grain_of_an_abort_that_followed_its_first_chunk_at_once_is_unknown() -> None:
    """An instant stream (2026-12-04, a loaded run): the abort 0.6 ms after the first chunk, the
    whole turn written 2 ms after the abort -- the finished stream's save, or an app going on after
    the client left: the two cannot be ordered, so the cut tested nothing that can be told."""
    from lab.investigate.browser.cut import finished_before_cut

    instant = 0.001  # the earlier reply streamed whole in 1 ms
    why = finished_before_cut(_lab_cut(0.0526, abort_after_start_s=0.0506, earlier_reply_s=instant))
    assert why is not None and "within the clock's grain" in why, why
    assert finished_before_cut(_lab_cut(0.0700, abort_after_start_s=0.0506, earlier_reply_s=instant)) is None


def test_a_turn_stored_just_before_its_first_chunk_of_a_long_reply_is_judged_though_the_abort_is_near() -> None:
    """Stores, then streams (a Fastify app, 2026-12-05): the question written 1 ms before the
    first frame, the abort 2 ms after it (52 ms after the send) -- within the grain of the write,
    but the earlier turn took 350 ms from its send to its stream's end: this one's stream cannot
    have ended before the abort, so the cut is judged. The same times beside an earlier turn of
    72 ms stay unknown (the cut is not clearly inside it)."""
    from lab.investigate.browser.cut import finished_before_cut

    assert finished_before_cut(_lab_cut(0.049, abort_after_start_s=0.052, earlier_reply_s=0.3)) is None
    why = finished_before_cut(_lab_cut(0.049, abort_after_start_s=0.052, earlier_reply_s=0.022))
    assert why is not None and "within the clock's grain" in why, why


class _Request:
    def __init__(self, body: str | None, method: str = "POST", url: str = "http://127.0.0.1:1/chat") -> None:
        self.post_data, self.method, self.url = body, method, url


def test_a_span_starts_at_the_first_fragment_not_at_headers_sent_before_the_model_answered() -> None:
    """An SSE app that flushes its headers at once and sends its first token 300 ms later: the
    span starts at the network's first bytes of the body, so a cut right after that first token
    is inside the reply (from the headers it was 'too late': 15 of 15 unknown, 2026-12-05)."""
    import asyncio

    from lab.investigate.browser.cut import Posts

    posts, req = Posts(), _Request('{"message": "hello there"}')
    posts._request(req)  # type: ignore[arg-type]
    posts.answered[id(req)] = 10.0  # the headers
    posts._sent({"requestId": "7", "request": {"method": "POST", "postData": '{"message": "hello there"}'}})
    posts._data({"requestId": "7"})
    first = posts.first_data["7"]
    posts._data({"requestId": "7"})  # later chunks change nothing
    posts._end(req, False)  # type: ignore[arg-type]
    span = asyncio.run(posts.span("hello there", deadline=0.0))
    assert span is not None and span.start == first and span.closed is not None and span.end is None
    # No body seen (a cut before the first byte reached the network's record): the headers.
    other = _Request('{"message": "no body"}')
    posts._request(other)  # type: ignore[arg-type]
    posts.answered[id(other)] = 11.0
    posts._end(other, True)  # type: ignore[arg-type]
    assert asyncio.run(posts.span("no body", deadline=0.0)) == Span(11.0, posts.ended[id(other)][0], None)


class _Page:
    """A page as the watchers key it (weakly): nothing more is read of it here."""


def test_an_answer_begins_at_its_first_frame_of_the_apps_kinds_not_at_a_ping(monkeypatch: pytest.MonkeyPatch) -> None:
    """write_refused at=answer on frames: a Socket.IO ping, the message the page sent, the app's
    ack (which may come before the question is stored) and frames from before the send do not
    begin the reply; its first fragment does."""
    from lab.investigate.browser import app_frames
    from lab.investigate.browser.cut import answer_begun
    from lab.investigate.spec import parse as sp

    spec = sp.load(ROOT / "examples" / "node-socketio.toml")
    assert spec.transport is not None and spec.transport.ack == "ack"
    page, log = _Page(), app_frames.FrameLog()
    monkeypatch.setitem(app_frames._LOGS, page, log)
    log._add("received", '42["done",{"reply":"Echo: before"}]', 1)  # the turn before's end
    begun = answer_begun(page, spec)  # type: ignore[arg-type]
    assert not begun()
    log._add("sent", '42["chat",{"text":"hello"}]', 1)  # the message itself
    log._add("received", "2", 1)  # Engine.IO's ping
    assert not begun()
    log._add("received", '42["ack",{"conversation_id":"ab"}]', 1)
    assert not begun()
    log._add("received", '42["token",{"text":"Echo"}]', 1)
    assert begun()


def test_a_streamed_http_answer_begins_at_its_bodys_first_bytes_not_its_headers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lab.investigate.browser import cut
    from lab.investigate.spec import parse as sp

    spec = sp.load(ROOT / "examples" / "node-sse.toml")
    page, posts = _Page(), cut.Posts()
    posts._sent({"requestId": "1", "request": {"method": "POST", "postData": "{}"}})
    posts._data({"requestId": "1"})  # an earlier send's answer: not this one's
    monkeypatch.setitem(cut._POSTS, page, posts)
    begun = cut.answer_begun(page, spec)  # type: ignore[arg-type]
    send = _Request('{"message": "hi"}')
    posts._request(send)  # type: ignore[arg-type]
    posts._sent({"requestId": "2", "request": {"method": "POST", "postData": '{"message": "hi"}'}})
    posts._answer(type("R", (), {"request": send})())  # type: ignore[arg-type]
    assert not begun()  # its headers only
    posts._data({"requestId": "2"})
    assert begun()


def test_a_reply_streamed_on_its_own_request_is_the_answer_of_the_post_before_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """[stream] follow (examples/node-relay.toml): the message's POST is answered 202 {"turn"},
    the reply streams on GET /api/turns/<turn>/events. That GET is the send's answer -- its span
    is the cut's, its first bytes begin the answer (write_refused at=answer) -- and the 202's
    body is not; a GET of another path (the history) answers nothing."""
    import asyncio

    from lab.investigate.browser import cut
    from lab.investigate.spec import parse as sp

    spec = sp.load(ROOT / "examples" / "node-relay.toml")
    assert spec.stream is not None and spec.stream.follow == "/api/turns/{turn}/events"
    page, posts = _Page(), cut.Posts(cut.follow_pattern(spec.stream.follow))
    monkeypatch.setitem(cut._POSTS, page, posts)
    begun = cut.answer_begun(page, spec)  # type: ignore[arg-type]
    body = '{"thread": "t", "prompt": "hi there"}'
    post = _Request(body)
    posts._request(post)  # type: ignore[arg-type]
    posts._sent({"requestId": "1", "request": {"method": "POST", "postData": body, "url": "http://h/api/turns"}})
    posts._data({"requestId": "1"})  # the 202's body
    assert not begun() and posts.carrying("hi there") is None
    history = _Request(None, "GET", "http://h/api/threads/t")
    posts._request(history)  # type: ignore[arg-type]
    posts._sent({"requestId": "2", "request": {"method": "GET", "url": "http://h/api/threads/t"}})
    posts._data({"requestId": "2"})
    assert not begun() and posts.carrying("hi there") is None
    stream = _Request(None, "GET", "http://h/api/turns/9f3a/events")
    posts._request(stream)  # type: ignore[arg-type]
    posts._sent({"requestId": "3", "request": {"method": "GET", "url": "http://h/api/turns/9f3a/events"}})
    assert not begun()  # its headers at most
    posts._data({"requestId": "3"})
    assert begun() and posts.carrying("hi there") is stream
    posts._end(stream, False)  # type: ignore[arg-type]  # the cut
    span = asyncio.run(posts.span("hi there", deadline=0.0))
    assert span is not None and span.start == posts.first_data["3"] and span.closed is not None
