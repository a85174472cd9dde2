"""A user's own requests as the recorder reads them (lab.investigate.plugin.exchanges): a form's
POST answered 303 and the page after it 200 is a send answered (post/redirect/get), dated by the
303; a redirect whose next request failed, or that led elsewhere (a login page), is no answer; a refresh is the main frame's document
asked for again by GET -- not a send's redirect, a form's POST, a frame's load or a fetch."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from lab.investigate.plugin.exchanges import (
    await_read,
    followed_answer,
    is_refresh,
    numbered,
    polled_answers,
    read_after,
    send_of,
)
from lab.model.history import Send
from lab.investigate.spec import parse as sp

ROOT = Path(__file__).resolve().parents[5]
PRG = sp.load(ROOT / "examples" / "node-prg.toml")  # a form POST to /c/{session}/say, answered 303
TIMING = {"startTime": 1_000_000.0, "responseStart": 5.0, "responseEnd": 6.0}


def _req(method: str = "GET", nav: bool = True, frame: object = None, before: Any = None, **kw: Any) -> Any:
    return SimpleNamespace(
        method=method, is_navigation_request=lambda: nav, frame=frame, redirected_from=before, redirected_to=None, **kw
    )


def _resp(req: Any, status: int, html: bool = True) -> Any:
    req.response = lambda: resp
    resp = SimpleNamespace(status=status, request=req, headers={"content-type": "text/html" if html else ""})
    return resp


def test_a_post_redirect_get_send_is_answered_by_the_page_it_led_to() -> None:
    post = _req("POST", post_data="text=hello+there", timing=TIMING, failure=None)
    page = _req("GET", before=post, url="http://127.0.0.1:1/c/0123456789abcdef")
    post.redirected_to = page
    answered = _resp(post, 303)
    _resp(page, 200)
    s = send_of(PRG, post, answered)
    assert (s.text, s.outcome, s.status, s.reason) == ("hello there", "ok", 200, "HTTP 303 -> 200")
    assert s.t_complete == 1000.005  # the 303's first byte: the app's answer
    _resp(page, 500)
    assert send_of(PRG, post, answered).outcome == "info"
    page.response = lambda: None  # the page's GET failed: no answer the user saw
    s = send_of(PRG, post, answered)
    assert s.outcome == "info" and "redirected to failed" in s.reason
    # Led to a login page, not the conversation: no answer to the send, whatever its status.
    login = _req("GET", before=post, url="http://127.0.0.1:1/login")
    post.redirected_to = login
    _resp(login, 200)
    s = send_of(PRG, post, answered)
    assert s.outcome == "info" and s.reason == "HTTP 303 -> 200 at /login, not the conversation's page", s


def test_a_refresh_is_the_main_frames_document_asked_for_again_by_get() -> None:
    main = object()
    to_chat = lambda r: r.method == "POST"  # noqa: E731
    send = _req("POST", frame=main)
    for r in (send, _req(frame=object()), _req(nav=False, frame=main), _req(frame=main, before=send)):
        assert not is_refresh(r, main, to_chat), r
    assert is_refresh(_req(frame=main), main, to_chat)
    assert is_refresh(_req(frame=main, before=_req(frame=main)), main, to_chat)  # a reload's own redirect


def test_a_message_id_the_test_sent_is_the_sends_and_a_message_sent_again_one_turn() -> None:
    """The built-in service's API takes an id ([chat] id_field): the history's rows carry it, so
    the sends must too (they were "t1", "t2": every row unplaced, a correct app drawn losing
    every turn). A message sent again with its id is one turn; a send without one numbers all."""
    spec = sp.load(ROOT / "examples" / "chat-service.toml")
    req = SimpleNamespace(post_data='{"message": "hi", "id": "m-1"}', timing=TIMING, failure=None)
    assert send_of(spec, req, None).id == "m-1"  # type: ignore[arg-type]
    sends = [Send(i, "x", 0) for i in ("a", "b", "a", "c")]
    assert numbered(sends) and [(s.id, s.turn) for s in sends] == [("a", 1), ("b", 2), ("a", 1), ("c", 3)]
    sends = [Send(i, "x", 0) for i in ("a", "", "b")]
    assert not numbered(sends) and [(s.id, s.turn) for s in sends] == [("t1", 1), ("t2", 2), ("t3", 3)]


class EndedOnReload:
    """A page whose test ended on its reload: its history GET made after the refresh is answered
    once the lab has let its events in ``answer_after`` times (None: never made one)."""

    def __init__(self, reads: list[Any], asked: list[Any], answer_after: int | None, failed: bool) -> None:
        self.reads, self.waits, self.answer_after = reads, 0, answer_after
        self.req = SimpleNamespace(failure="net::ERR" if failed else None)
        if answer_after is not None:
            asked.append((100.01, self.req))

    def wait_for_load_state(self, state: str, timeout: float) -> None:
        assert state == "networkidle" and timeout > 0

    def wait_for_timeout(self, ms: float) -> None:
        self.waits += 1
        if self.waits == self.answer_after:
            self.reads.append((100.2, SimpleNamespace(request=self.req)))


@pytest.mark.parametrize(
    ("answer_after", "failed", "waits", "read"), [(3, False, 3, True), (None, False, 0, False), (3, True, 0, False)]
)
def test_a_test_ended_on_its_reload_gets_the_pages_read_after_it(
    answer_after: int | None, failed: bool, waits: int, read: bool
) -> None:
    """A read in flight is waited for until it is answered; a page that made none, or whose read
    failed, is not waited on beyond its network going idle."""
    reads: list[Any] = []
    asked: list[Any] = []
    page = EndedOnReload(reads, asked, answer_after, failed)
    await_read([page], reads, asked, 100.0, 5)  # type: ignore[list-item]
    assert (page.waits, read_after(reads, 100.0)) == (waits, read)


def test_a_streamed_answer_is_answered_at_its_end_and_one_never_ended_is_cut() -> None:
    """model-fastapi streams when asked ({"stream": true}): answered when the stream ended, as
    lab investigate dates it (its first chunk made a reply stored as the stream ends look
    late); a stream the test's reload cut is acknowledged at its first chunk, and cut. Asked
    without "stream", the same route's JSON answer is answered with its first byte."""
    spec = sp.load(ROOT / "examples" / "model-fastapi.toml")
    timing = {"startTime": 1_000_000.0, "responseStart": 5.0, "responseEnd": 900.0}

    def sent(body: str, t: dict[str, float], kind: str = "text/plain", **kw: Any) -> Send:
        req = SimpleNamespace(post_data=body, timing=t, failure=None, url="http://127.0.0.1/api/chat")
        resp = SimpleNamespace(status=200, request=req, headers={"content-type": kind}, text=lambda: "{}")
        req.redirected_to = None
        return send_of(spec, req, resp, **kw)  # type: ignore[arg-type]

    whole = sent('{"prompt": "hi", "stream": true}', timing)
    assert whole.streamed and whole.t_complete == 1000.9 and not whole.cut
    cut = sent('{"prompt": "hi", "stream": true}', {**timing, "responseEnd": -1})
    assert cut.cut and cut.t_complete == 1000.005 and cut.outcome == "ok"
    # Chromium may date a cut body's end at its headers: the request's failure, with no end
    # event seen, is the cut; a stream whose end event came and whose close then failed is whole.
    early = {**timing, "responseEnd": 6.0}
    failed = sent('{"prompt": "hi", "stream": true}', early, failed=True)
    assert failed.cut and failed.t_complete == 1000.005 and failed.outcome == "ok"
    ended = sent('{"prompt": "hi", "stream": true}', timing, ended=1000.8, failed=True)
    assert not ended.cut and ended.t_complete == 1000.8
    plain = sent('{"prompt": "hi"}', timing, "application/json")
    assert not plain.streamed and plain.t_complete == 1000.005


def test_a_polled_reply_answers_its_send_at_the_first_read_that_shows_it() -> None:
    """[chat] reply_from = "history" (relay.js's page polls the thread after the 202): answered by
    the first read after the 202 showing the message's reply; the message itself missing, by a read
    showing a reply more than the last read before it was sent; a reply that never showed is no
    answer -- as lab investigate's own page judges it."""
    spec = sp.load(ROOT / "examples" / "node-relay-poll.toml")

    def thread(*rows: tuple[str, str]) -> str:
        return json.dumps({"log": [{"by": by, "text": text} for by, text in rows]})

    def send(i: int, text: str, at: float) -> Send:
        s = Send(f"t{i}", text, i, t_invoke=at)
        s.complete("ok", 202, "HTTP 202", at + 0.01)
        return s

    one, two, three = send(1, "first question", 100.0), send(2, "second question", 101.0), send(3, "third", 102.0)
    q1, a1 = ("me", "first question"), ("assistant", "an answer")
    reads = [
        (100.02, 100.03, thread(q1)),  # the message, no reply yet
        (100.30, 100.31, thread(q1, a1)),  # its reply
        (101.02, 101.03, thread(q1, a1)),  # the second message lost; no reply more yet
        (101.30, 101.32, thread(q1, a1, ("assistant", "an answer"))),  # a reply more: the user saw one
    ]
    polled_answers(spec, [one, two, three], reads)
    assert (one.outcome, one.t_complete, one.ms) == ("ok", 100.31, 310.0)
    assert (two.outcome, two.t_complete) == ("ok", 101.32)
    assert three.outcome == "info" and "no read of the history after it showed its reply" in three.reason


def test_a_followed_reply_answers_its_send_at_its_streams_end_and_a_reload_cuts_it() -> None:
    """[stream] follow (relay.js: 202 {"turn"}, the reply on GET /api/turns/{turn}/events): the
    send is answered when the end event of the stream its answer names reached the page; a stream
    the page left before its end (its request failed) is cut, at its first byte; an answer naming
    no turn, or no stream opened for it, is no answer."""
    spec = sp.load(ROOT / "examples" / "node-relay.toml")

    def send(i: int) -> Send:
        s = Send(f"t{i}", f"question {i}", i, t_invoke=100.0 * i)
        s.complete("ok", 202, "HTTP 202", 100.0 * i + 0.01)
        return s

    def get(turn: str, start: float, failure: str | None = None) -> Any:
        timing = {"startTime": start * 1000, "responseStart": 5.0, "responseEnd": -1}
        return SimpleNamespace(url=f"http://127.0.0.1:1/api/turns/{turn}/events", timing=timing, failure=failure)

    follows = [get("aa11", 100.02), get("bb22", 200.02, "net::ERR_ABORTED")]
    ends = {follows[0].url: 100.4}
    ended = lambda url, after: ends.get(url)  # noqa: E731
    whole, cut, unnamed, unopened = send(1), send(2), send(3), send(4)
    followed_answer(spec, whole, '{"turn": "aa11"}', follows, ended)
    followed_answer(spec, cut, '{"turn": "bb22"}', follows, ended)
    followed_answer(spec, unnamed, '{"queued": true}', follows, ended)
    followed_answer(spec, unopened, '{"turn": "cc33"}', follows, ended)
    assert (whole.outcome, whole.t_complete, whole.streamed, whole.cut) == ("ok", 100.4, True, None)
    assert (cut.outcome, cut.cut, cut.t_complete) == ("ok", True, 200.025)
    assert unnamed.outcome == "info" and "names no $.turn" in unnamed.reason
    assert unopened.outcome == "info" and "opened no stream of its reply" in unopened.reason
