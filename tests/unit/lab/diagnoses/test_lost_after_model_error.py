"""lost_after_model_error: the message of the send whose model call failed was never written,
while the app stored every other turn -- and not where nothing says the call failed, where the
app loses turns anyway, or where the record cannot say."""

from __future__ import annotations

from typing import Any

from lab import diagnoses as dg
from lab.model.history import Row, Send, Trial

T0 = 1_800_000_000.0


def _trial(tid: str, stored: set[int], erred: bool = True, fault: str = "model_error") -> Trial:
    sends = []
    for turn in (1, 2, 3):
        s = Send(f"t{turn}", f"chaoslab probe {tid} turn {turn} cd34", turn, reply=f"reply {turn}", t_invoke=T0 + turn)
        s.complete("info" if turn == 2 else "ok", 502 if turn == 2 else 200, "", T0 + turn + 0.5)
        s.under_fault = turn == 2
        sends.append(s)
    store = [
        {"t": T0 + t + 0.4, "conn": "c1", "cmd": "LPUSH", "args": [], "write": True, "user": [t], "reply": [t]}
        for t in sorted(stored)
    ]
    calls: list[dict[str, Any]] = [
        {"messages": [{"role": "user", "text": s.text}], "outcome": "error" if s.turn == 2 and erred else "whole"}
        for s in sends
    ]
    rows = [r for t in sorted(stored) for r in (Row("", "user", sends[t - 1].text), Row("", "assistant", f"reply {t}"))]
    final = {"key": "k", "type": "list", "pttl_ms": 1000, "values": len(rows), "stored_turns": sorted(stored)}
    return Trial(
        tid,
        sends=sends,
        final_rows=rows,
        turns=3,
        store=store,
        redis_final=final,
        fault=fault,
        history_reads=[200],
        model_calls=calls,
        fault_turn=2,
    )


def codes(trials: list[Trial]) -> list[str]:
    return [d.code for d in dg.diagnose(trials)]


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
    recovered.model_calls.append({"messages": [{"role": "user", "text": s2.text}], "outcome": "whole"})
    found = {d.code: d for d in dg.diagnose([_trial("a", {1, 3}), recovered])}
    assert (found["lost_after_model_error"].k, found["lost_after_model_error"].n) == (1, 1)
