"""lost_after_model_error: the message of the send whose model call failed was never written,
while the app stored every other turn -- and not where nothing says the call failed, where the
app loses turns anyway, or where the record cannot say."""

from __future__ import annotations

from lab import diagnoses as dg
from lab.model.history import Trial
from tests.unit.lab.diagnoses.model_trials import call, codes, rows, sends, write


def _trial(tid: str, stored: set[int], erred: bool = True, fault: str = "model_error", failed: str = "error") -> Trial:
    ss = sends(tid, answer=("info", 502))
    final = {"key": "k", "type": "list", "pttl_ms": 1000, "values": 2 * len(stored), "stored_turns": sorted(stored)}
    return Trial(
        tid,
        sends=ss,
        final_rows=rows(ss, sorted(stored)),
        turns=3,
        store=[write(t) for t in sorted(stored)],
        redis_final=final,
        fault=fault,
        history_reads=[200],
        model_calls=[call(s.text, failed if s.turn == 2 and erred else "whole") for s in ss],
        fault_turn=2,
    )


def test_the_failed_sends_message_never_written_is_drawn_with_its_evidence() -> None:
    found = {d.code: d for d in dg.diagnose([_trial("a", {1, 3}), _trial("b", {1, 3}), _trial("ok", {1, 2, 3})])}
    assert set(found) == {"lost_after_model_error"}, found
    d = found["lost_after_model_error"]
    assert (d.k, d.n, d.trials) == (2, 3, ["a", "b"])
    assert "the model's call for turn 2 was answered with the injected error, the app answered 502" in d.evidence


def test_not_drawn_without_the_models_error_or_where_turns_go_missing_anyway() -> None:
    assert "lost_after_model_error" not in codes([_trial("no-error", {1, 3}, erred=False)])
    assert "lost_after_model_error" not in codes([_trial("leaky", {1})])  # turn 3 lost too: another cause
    assert "lost_after_model_error" not in codes([_trial("other-fault", {1, 3}, fault="down")])
    blind = _trial("no-record", {1, 3})
    blind.store = None
    assert "lost_after_model_error" not in codes([blind])


def test_a_trial_whose_app_retried_past_the_error_is_not_in_the_pool() -> None:
    recovered = _trial("recovered", {1, 2, 3})
    s2 = recovered.sends[1]
    assert recovered.model_calls is not None
    recovered.model_calls.append(call(s2.text))
    found = {d.code: d for d in dg.diagnose([_trial("a", {1, 3}), recovered])}
    assert (found["lost_after_model_error"].k, found["lost_after_model_error"].n) == (1, 1)


def test_a_stall_past_the_apps_timeout_is_a_model_failure_too() -> None:
    """model_stall: the stand-in hung up ("held") or the app gave up first ("client_gone")."""
    held = _trial("a", {1, 3}, fault="model_stall", failed="held")
    gone = _trial("b", {1, 3}, fault="model_stall", failed="client_gone")
    found = {d.code: d for d in dg.diagnose([held, gone])}
    assert set(found) == {"lost_after_model_error"} and found["lost_after_model_error"].k == 2
    assert "the model's call for turn 2 was held with no answer" in found["lost_after_model_error"].evidence
