"""A streamed answer's reply, in the app's own format, is not read as text: the settled history
gives it (the assistant row right after the send's own question), so that the store's record can
place the reply's write -- a reply saved after its stream ended is late like any other write.
Not where the history's order leaves it unclear whose reply is whose."""

from __future__ import annotations

from pathlib import Path

from lab.investigate.evidence.rows import replies_from
from lab.model.history import Row, Send

ROOT = Path(__file__).resolve().parents[5]


def _sends(*turns: int, cut: int | None = None) -> list[Send]:
    out = []
    for k, turn in enumerate(turns):
        s = Send(f"m{k}", f"q{k}", turn, streamed=True, cut=(turn == cut) or None)
        s.complete("ok", 200, "HTTP 200", float(k + 1))
        out.append(s)
    return out


def _rows(*pairs: tuple[str, str]) -> list[Row]:
    return [Row("", role, text) for role, text in pairs]


def test_a_streamed_reply_is_the_assistant_row_after_its_question() -> None:
    sends = _sends(1, 2, 3, cut=3)
    sends[1].reply = "as answered"
    rows = _rows(
        ("user", "q0"), ("assistant", "a0"), ("user", "q1"), ("assistant", "a1"), ("user", "q2"), ("assistant", "a2")
    )
    replies_from(rows, sends)
    assert [s.reply for s in sends] == ["a0", "as answered", None]  # the cut one's reply was cut short


def test_a_question_with_no_reply_after_it_leaves_the_next_reply_unplaced() -> None:
    """q0 q1 a: a0 landed late and a1 was lost, or a0 was lost -- the reply may be either's."""
    sends = _sends(1, 2)
    replies_from(_rows(("user", "q0"), ("user", "q1"), ("assistant", "a1")), sends)
    assert [s.reply for s in sends] == [None, None]


def test_a_failed_turn_whose_question_was_stored_also_waits() -> None:
    """A 5xx may have stored the question and not its reply: the next reply is still not placed,
    but once the waiting questions have as many replies, the turns after them are."""
    sends = _sends(1, 2, 3)
    sends[0].outcome = "info"
    rows = _rows(("user", "q0"), ("user", "q1"), ("assistant", "a1"), ("user", "q2"), ("assistant", "a2"))
    replies_from(rows, sends)
    assert [s.reply for s in sends] == [None, None, None]  # one reply for two waiting: one still waits
    rows = _rows(("user", "q0"), ("assistant", "a0"), ("user", "q1"), ("assistant", "a1"), ("user", "q2"))
    replies_from(rows, sends)
    assert [s.reply for s in sends] == [None, "a1", None]  # a failed turn is never placed itself


def test_two_turns_written_interleaved_stay_unplaced_and_the_next_turn_is_placed() -> None:
    """Replies stored after their answers: turn 1's question landed before turn 0's reply."""
    sends = _sends(1, 2, 3)
    rows = _rows(
        ("user", "q0"), ("user", "q1"), ("assistant", "a0"), ("assistant", "a1"), ("user", "q2"), ("assistant", "a2")
    )
    replies_from(rows, sends)
    assert [s.reply for s in sends] == [None, None, "a2"]


def test_a_greeting_and_rows_of_other_roles_change_nothing() -> None:
    sends = _sends(1, 2)
    rows = [Row("", "assistant", "Hi! How can I help?"), *_rows(("user", "q0"), ("assistant", "a0"))]
    rows += [Row("", "tool", "lookup"), *_rows(("user", "q1"), ("assistant", "a1"))]
    replies_from(rows, sends)
    assert [s.reply for s in sends] == ["a0", "a1"]


def test_a_text_sent_twice_is_not_placed() -> None:
    sends = _sends(1, 2)
    sends[1].text = "q0"
    replies_from(_rows(("user", "q0"), ("assistant", "a0"), ("user", "q0"), ("assistant", "a1")), sends)
    assert [s.reply for s in sends] == [None, None]


def test_questions_stored_against_their_order_give_no_reply() -> None:
    """Newest first, read as oldest first: the row after each question is the earlier turn's reply."""
    sends = _sends(1, 2)
    replies_from(_rows(("assistant", "a1"), ("user", "q1"), ("assistant", "a0"), ("user", "q0")), sends)
    assert [s.reply for s in sends] == [None, None]


def test_a_turn_sent_from_two_tabs_at_once_gets_no_reply() -> None:
    sends = _sends(1, 2, 2)
    rows = _rows(
        ("user", "q0"), ("assistant", "a0"), ("user", "q1"), ("user", "q2"), ("assistant", "x"), ("assistant", "y")
    )
    replies_from(rows, sends)
    assert [s.reply for s in sends] == ["a0", None, None]


def _streamed(
    end: str | None, body: str, marked: float | None, asked: bool = True, request: dict | None = None
) -> Send:
    import tomllib

    from lab.investigate.evidence.rows import answer
    from lab.investigate.spec import parse as sp

    data = tomllib.loads((ROOT / "examples" / "node-sse.toml").read_text())
    data["stream"] = {"request": request or {}, **({"end": end} if end else {})}
    spec = sp.parse(data, ROOT / "examples" / "node-sse.toml")
    raw = {"status": 200, "type": "text/event-stream", "body": body, "ms": 40.0, "error": None, "cut": None}
    raw |= {"start": 10.0, "end": 10.9, **({"marked": marked} if marked else {})}
    return answer(spec, raw, "m1", "q", 1, streamed=asked, cut=False, t_invoke=10.0)  # type: ignore[arg-type]


def test_a_stream_answered_at_its_end_event_and_not_answered_without_it() -> None:
    """[stream] end: the send is answered when the app's own end event came (not the close after
    it); a stream that closed without it (an error event instead) is not answered (info)."""
    done = "data: a\n\nevent: end\ndata: {}\n\n"
    s = _streamed("event: end", done, marked=10.5)
    assert s.outcome == "ok" and s.t_complete == 10.5
    failed = _streamed("event: end", "data: a\n\nevent: fail\ndata: {}\n\n", marked=None)
    assert failed.outcome == "info" and "without its end event" in failed.reason
    unnamed = _streamed(None, "data: a\n\nevent: fail\ndata: {}\n\n", marked=None)
    assert unnamed.outcome == "ok" and unnamed.t_complete == 10.9  # no end event named: the close
    # Not asked for a stream: one all the same where every answer streams (request = {}), not
    # where a stream must be asked for (the answer was JSON then).
    assert _streamed("event: end", done, marked=10.5, asked=False).t_complete == 10.5
    plain = _streamed("event: end", '{"reply": "a"}', marked=None, asked=False, request={"stream": True})
    assert plain.outcome == "ok" and plain.t_complete == 10.9


def test_which_answers_stream_over_http_and_whose_end_the_lab_reads() -> None:
    """write_refused takes a streamed answer as acknowledged only where the lab reads its end event
    (lab.investigate.run.mid_write): the lab's page with [stream] end. A plain stream ends as an
    in-band error would -- its end is not read."""
    import tomllib

    from lab.investigate.evidence.rows import end_read, http_stream
    from lab.investigate.spec import parse as sp

    def spec(stream: dict) -> "sp.Spec":
        data = tomllib.loads((ROOT / "examples" / "node-sse.toml").read_text()) | {"stream": stream}
        return sp.parse(data, ROOT / "examples" / "node-sse.toml")

    every = spec({"request": {}, "end": "data: [DONE]"})
    assert http_stream(every, False) and end_read(every, False) == "data: [DONE]"
    asked = spec({"request": {"stream": True}, "end": "event: end"})
    assert not http_stream(asked, False) and end_read(asked, False) is None  # a JSON answer: no stream
    assert end_read(asked, True) == "event: end"
    plain = spec({"request": {}})
    assert http_stream(plain, False) and end_read(plain, False) is None


def test_a_json_answer_that_says_something_failed_names_the_field() -> None:
    from lab.investigate.evidence.rows import says_failure

    assert says_failure('{"message": {"content": "hi"}, "warning": "not saved"}') == "$.warning"
    assert says_failure('{"reply": "hi", "saved": false}') == "$.saved"
    assert says_failure('{"data": [{"ok": true}, {"errors": ["store down"]}]}') == "$.data[1].errors"
    # Nothing said: empty or null error fields, a reply that talks of errors, an ok, no JSON.
    assert says_failure('{"reply": "an error in your code", "error": null, "errors": [], "ok": true}') is None
    assert says_failure("plain text, error and all") is None


def test_a_send_redirected_anywhere_but_the_conversation_is_no_answer() -> None:
    """post/redirect/get leads back to the conversation's page: answered. A redirect to a login
    or an error page answers 200 too, and the message was not taken: no answer (info)."""
    from lab.investigate.evidence.rows import answer
    from lab.investigate.spec import parse as sp

    spec = sp.load(ROOT / "examples" / "node-prg.toml")  # history /c/{session}
    raw = {"status": 200, "type": "text/html", "body": "<html></html>", "ms": 40.0, "error": None, "cut": None}
    back = answer(spec, raw | {"redirected": True, "url": "http://h/c/0123abcd"}, "m1", "q", 1, False, False, 1.0)  # type: ignore[arg-type]
    assert back.outcome == "ok", back
    login = answer(spec, raw | {"redirected": True, "url": "http://h/login?next=/c/1"}, "m1", "q", 1, False, False, 1.0)  # type: ignore[arg-type]
    assert (
        login.outcome == "info" and login.reason == "HTTP 200 at /login, after a redirect: not the conversation's page"
    )
    assert answer(spec, raw | {"url": "http://h/login"}, "m1", "q", 1, False, False, 1.0).outcome == "ok"  # type: ignore[arg-type]  # not redirected
