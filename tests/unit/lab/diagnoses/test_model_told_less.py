"""model_told_less: drawn where a call lacked a newer turn Redis held before its send left, and
never from what a design of the prompt gives (a window, a token budget, no memory at all), a
summary of the turns left out, or a turn the store did not hold (a storage loss)."""

from __future__ import annotations

from typing import Any

from lab import diagnoses as dg
from lab.model.history import Send, Trial
from tests.unit.lab.diagnoses.model_trials import T0, codes, rows, sends, write

SYSTEM = {"role": "system", "text": "You are concise."}


def _call(sends: list[Send], question: int, given: list[int], extra: str | None = None) -> dict[str, Any]:
    msgs: list[dict[str, str]] = [SYSTEM] + ([{"role": "system", "text": extra}] if extra else [])
    for turn in given:
        msgs += [{"role": "user", "text": sends[turn - 1].text}, {"role": "assistant", "text": f"reply {turn}"}]
    msgs.append({"role": "user", "text": sends[question - 1].text})
    return {"t_start": T0 + question + 0.1, "messages": msgs}


def _trial(tid: str, given: dict[int, list[int]], stored: bool = True, extra: str | None = None) -> Trial:
    """Four turns, each stored (user and reply, one command) 100 ms before its answer, or never."""
    ss = sends("x", 4, faulted=None)
    store = [write(turn) for turn in range(1, 5) if stored]
    calls = [_call(ss, q, given.get(q, list(range(1, q))), extra if q in given else None) for q in range(1, 5)]
    return Trial(tid, sends=ss, final_rows=rows(ss), turns=4, store=store, history_reads=[200], model_calls=calls)


def test_a_newer_turn_left_out_while_redis_held_it_is_drawn_with_its_evidence() -> None:
    lagging = _trial("lag", {4: [1, 2]})  # the call for turn 4 lacked turn 3, newer than those it had
    found = {d.code: d for d in dg.diagnose([lagging, _trial("whole", {})])}
    assert set(found) == {"model_told_less"}, found
    d = found["model_told_less"]
    assert (d.k, d.n, d.trials) == (1, 2, ["lag"])
    assert "turn 4 carried turns [1, 2] of [1, 2, 3]: turn 3 had been acknowledged and in Redis" in d.evidence


def test_nothing_given_counts_only_beside_a_call_given_the_same_length_whole() -> None:
    amnesia = _trial("amnesia", {3: []})
    assert codes([amnesia, _trial("whole", {})]) == ["model_told_less"]
    # No memory in any call is what an app that sends no history at all does: not this claim.
    assert codes([_trial(f"none{i}", {2: [], 3: [], 4: []}) for i in range(3)]) == []


def test_designs_summaries_and_storage_losses_are_not_drawn() -> None:
    window = [_trial(f"w{i}", {4: [2, 3]}) for i in range(3)]  # the newest 2 in every call
    assert codes(window) == []
    budget = [_trial("b1", {4: [3]}), _trial("b2", {4: [2, 3]})]  # the newest that fit: a suffix
    assert codes(budget) == []
    relevance = _trial("rel", {4: [1, 3]})  # neither end: what a memory picking by relevance gives
    assert codes([relevance, _trial("whole", {})]) == []
    first_two = [_trial(f"f{i}", {4: [1, 2]}) for i in range(3)]  # the first 2 turns, in every call
    assert codes(first_two) == []
    summary = _trial("sum", {4: [1, 2]}, extra="Summary so far: the user probed twice.")
    assert codes([summary, _trial("whole", {})]) == []
    unstored = _trial("lost", {4: [1, 2]}, stored=False)  # Redis never held turn 3: not a copy's lag
    assert "model_told_less" not in codes([unstored, _trial("whole", {})])


def test_without_a_record_of_calls_it_is_not_judged_and_says_why() -> None:
    t = _trial("x", {})
    t.model_calls = None
    _, not_judged = dg.run([t])
    assert not_judged["model_told_less"] == "needs model + store in one trial"


def test_one_tab_s_turn_overwritten_by_the_other_s_is_a_storage_loss_not_a_lagging_copy() -> None:
    """Two tabs send turn 2 at once; the second tab's whole-document SET overwrites the first's
    (a lost update). The call for turn 3 lacks the overwritten send: Redis no longer held it, so
    this is not drawn -- though Redis held turn 2 (the other tab's). An Express app written
    unseen was drawn model_told_less 4/16 before, 2026-12-06."""
    ss = sends("tabs", 3, faulted=None)
    b = Send("t2b", "chaoslab probe tabs turn 2b cd34", 2, reply="reply 2b", t_invoke=ss[1].t_invoke)
    b.complete("ok", 200, "", ss[1].t_invoke + 0.5)
    both = [ss[0], ss[1], b, ss[2]]
    doc: dict[str, Any] = {"cmd": "SET", "user": [1, 2], "reply": [1, 2]}
    store = [
        write(1, ids=["t1"]),
        write(2, **doc, ids=["t1", "t2"]),
        {**write(2, **doc, ids=["t1", "t2b"]), "t": T0 + 2.45},  # the other tab's copy, without t2
    ]

    def told(given: list[Send], question: Send) -> dict[str, Any]:
        msgs = [SYSTEM] + [{"role": "user", "text": s.text} for s in given]
        return {"t_start": question.t_invoke + 0.1, "messages": [*msgs, {"role": "user", "text": question.text}]}

    calls = [told([], ss[0]), told([ss[0]], ss[1]), told([ss[0]], b), told([ss[0], b], ss[2])]
    kept = [r for r in rows(both, [1, 2, 3]) if r.text != ss[1].text]
    t = Trial("tabs", sends=both, final_rows=kept, turns=3, store=store, history_reads=[200], model_calls=calls)
    assert "model_told_less" not in codes([t, _trial("whole", {})])
    # The same call lacking the tab whose send Redis did hold is drawn.
    calls[3] = told([ss[0], ss[1]], ss[2])
    lagged = Trial("lag", sends=both, final_rows=kept, turns=3, store=store, history_reads=[200], model_calls=calls)
    assert "model_told_less" in codes([lagged, _trial("whole", {})])
