"""acked_write_refused: Redis refused one send's write and served reads; the send answered
success and the refused write's row is not stored. Never for a send that answered the refusal
with an error, nor for one whose rows are all stored (the write retried), nor for an app proven
to answer before its writes."""

from __future__ import annotations

from lab import diagnoses as dg
from lab.model.history import Trial
from tests.unit.lab.investigate.test_diagnose import FULL, _rows, _send, _trial


def _refused(tid: str, rows: list[str], outcome: str = "ok", status: int = 200) -> Trial:
    sends = [_send(1), _send(2, outcome, status, under_fault=True), _send(3)]
    return _trial(tid, _rows(*rows), sends, fault="write_refused", params={"at": "write"})


def test_a_question_or_reply_lost_under_an_acknowledged_refusal_is_drawn() -> None:
    question = _refused("q0", ["u1", "a1", "a2", "u3", "a3"])  # the question's write refused, swallowed
    reply = _refused("r0", ["u1", "a1", "u2", "u3", "a3"])  # the reply's
    (d,) = dg.diagnose([question, reply])
    assert (d.code, d.k, d.n, d.trials) == ("acked_write_refused", 2, 2, ["q0", "r0"])
    assert "answered 200" in d.evidence and "the question (its reply kept) absent" in d.evidence
    both = _refused("b0", ["u1", "a1", "u3", "a3"])  # one MULTI for the turn, refused whole
    (d,) = dg.diagnose([both])
    assert "the question and its reply absent" in d.evidence


def test_an_error_answered_or_a_write_that_landed_is_silence() -> None:
    honest = _refused("h0", ["u1", "a1", "u3", "a3"], outcome="fail", status=503)  # said so: not acknowledged
    retried = _refused("k0", ["u1", "a1", "u2", "a2", "u3", "a3"])  # every row stored after all
    assert [d.code for d in dg.diagnose([honest, retried])] == []


def test_an_app_proven_to_answer_before_writing_is_that_cause() -> None:
    fast = _trial(
        "l0", FULL, [_send(1, ms=20), _send(2, ms=20), _send(3, ms=20)], fault="latency", params={"latency_ms": 300}
    )
    refused = _refused("w0", ["u1", "a1", "a2", "u3", "a3"])
    assert [(d.code, d.also) for d in dg.diagnose([fast, refused])] == [("acked_too_fast", ["w0"])]
