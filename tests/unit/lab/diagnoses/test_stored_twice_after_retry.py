"""stored_twice_after_retry: the faulted send's message in the history twice after the model
failed its first call and answered the app's retry -- and not where nothing was retried, where
another turn is doubled too, or where the message is stored once."""

from __future__ import annotations

from lab import diagnoses as dg
from lab.model.history import Row, Trial
from tests.unit.lab.diagnoses.model_trials import call, codes, sends


def _trial(tid: str, doubled: set[int], outcomes: tuple[str, ...] = ("error", "whole")) -> Trial:
    ss = sends(tid)
    calls = [
        call(s.text, outcome, t_start=s.turn + k / 10)
        for s in ss
        for k, outcome in enumerate(outcomes if s.under_fault else ("whole",))
    ]
    stored = []
    for s in ss:
        stored += [Row("", "user", s.text)] * (2 if s.turn in doubled else 1) + [
            Row("", "assistant", f"reply {s.turn}")
        ]
    return Trial(
        tid,
        sends=ss,
        final_rows=stored,
        turns=3,
        fault="model_error",
        fault_params={"kind": "server_error", "times": 1},
        history_reads=[200],
        model_calls=calls,
        fault_turn=2,
    )


def test_the_retried_sends_message_stored_twice_is_drawn_and_not_as_duplicates() -> None:
    found = {d.code: d for d in dg.diagnose([_trial("a", {2}), _trial("b", {2}), _trial("once", set())])}
    assert set(found) == {"stored_twice_after_retry"}, found
    d = found["stored_twice_after_retry"]
    assert (d.k, d.n, d.trials) == (2, 3, ["a", "b"])
    assert "failed the first call for turn 2 and the app called again (2 calls for it)" in d.evidence, d.evidence


def test_drawn_where_every_retry_failed_too() -> None:
    assert "stored_twice_after_retry" in codes([_trial("all-failed", {2}, outcomes=("error", "error", "error"))])


def test_not_drawn_without_a_retry_or_where_other_turns_double_too() -> None:
    assert "stored_twice_after_retry" not in codes([_trial("no-retry", {2}, outcomes=("error",))])
    assert "stored_twice_after_retry" not in codes([_trial("first-ok", {2}, outcomes=("whole",))])
    found = codes([_trial("leaky", {2, 3})])
    assert "stored_twice_after_retry" not in found and "duplicates" in found  # another cause
