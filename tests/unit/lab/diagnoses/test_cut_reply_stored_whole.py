"""cut_reply_stored_whole: the text the model had sent before its stream was cut, written in the
same record shape as the trial's whole replies -- and not where the app marked it, dropped it,
or stored no whole reply the lab could compare it with."""

from __future__ import annotations

from lab import diagnoses as dg
from lab.model.history import Trial
from tests.unit.lab.diagnoses.model_trials import call, codes, rows, sends, write

PLAIN = '{"content": "<text>", "role": "assistant"}'
MARKED = '{"content": "<text>", "interrupted": true, "role": "assistant"}'


def _trial(tid: str, cut_shape: str | None, whole_shape: str | None = PLAIN, fault: str = "model_cut") -> Trial:
    ss = sends(tid)
    calls = [
        call(s.text, "cut", reply="Turn 2 as I see it. You", tokens_sent=7)
        if s.turn == 2
        else call(s.text, reply=f"reply {s.turn}", tokens_sent=20)
        for s in ss
    ]
    store = []
    for i, s in enumerate(ss):
        sh = cut_shape if s.turn == 2 else whole_shape
        store.append(write(s.turn, "SET", **({"shapes": [[i, sh]]} if sh else {})))
    final = {"key": "k", "type": "string", "pttl_ms": 1000, "values": 1, "stored_turns": [1, 2, 3]}
    return Trial(
        tid,
        sends=ss,
        final_rows=rows(ss),
        turns=3,
        store=store,
        redis_final=final,
        fault=fault,
        history_reads=[200],
        model_calls=calls,
        fault_turn=2,
    )


def test_a_cut_reply_in_a_whole_replys_record_is_drawn_with_its_evidence() -> None:
    found = {d.code: d for d in dg.diagnose([_trial("a", PLAIN), _trial("b", PLAIN), _trial("c", None)])}
    assert set(found) == {"cut_reply_stored_whole"}, found
    d = found["cut_reply_stored_whole"]
    assert (d.k, d.n, d.trials) == (2, 3, ["a", "b"])
    assert "stopped after 7 tokens and the app wrote those 7 words to Redis" in d.evidence, d.evidence


def test_not_drawn_where_the_cut_reply_is_marked_dropped_or_cannot_be_compared() -> None:
    assert "cut_reply_stored_whole" not in codes([_trial("marked", MARKED), _trial("dropped", None)])
    assert "cut_reply_stored_whole" not in codes([_trial("no-whole", PLAIN, whole_shape=None)])
    assert "cut_reply_stored_whole" not in codes([_trial("other-fault", PLAIN, fault="model_error")])
