"""The context oracle: each model call against the turns acknowledged before its send left --
told everything, told less, a turn twice, out of order -- and a fixed context window told
apart from a call that lost the history."""

from __future__ import annotations

from typing import Any

from lab.model.context import calls_since, fault_missed, judge, unserved, window
from lab.model.history import Send, Trial


def _sends(n: int) -> list[Send]:
    out = []
    for turn in range(1, n + 1):
        s = Send(f"t{turn}", f"chaoslab probe x turn {turn} abc", turn, t_invoke=float(turn))
        s.complete("ok", 200, "", turn + 0.5)
        out.append(s)
    return out


def _call(sends: list[Send], question: int, given: list[int], reply_quotes: bool = True) -> dict[str, Any]:
    """A call for turn ``question`` carrying the user texts of ``given`` (each with a reply that
    quotes turn 1's text, as the stand-in's replies do)."""
    msgs: list[dict[str, str]] = [{"role": "system", "text": "Be brief."}]
    for turn in given:
        msgs.append({"role": "user", "text": sends[turn - 1].text})
        if reply_quotes:
            msgs.append({"role": "assistant", "text": f'You first said "{sends[0].text}"'})
    msgs.append({"role": "user", "text": f"User says: {sends[question - 1].text}"})  # a template
    return {"t_start": question + 0.1, "messages": msgs}


def test_a_call_told_every_acknowledged_turn_once_in_order() -> None:
    sends = _sends(3)
    t = Trial("a", sends=sends, model_calls=[_call(sends, q, list(range(1, q))) for q in (1, 2, 3)])
    told = judge(t)
    assert [(x.send, x.expected, x.missing, x.repeated, x.out_of_order) for x in told] == [
        ("t1", [], [], [], False),
        ("t2", [1], [], [], False),
        ("t3", [1, 2], [], [], False),
    ]
    assert window(told) is None


def test_a_call_told_less_twice_or_out_of_order_says_which() -> None:
    sends = _sends(4)
    calls = [_call(sends, 3, []), _call(sends, 4, [2, 1, 1, 3], reply_quotes=False)]
    amnesia, muddled = judge(Trial("b", sends=sends, model_calls=calls))
    assert amnesia.missing == [1, 2] and amnesia.told_less
    assert muddled.missing == [] and muddled.repeated == [1] and muddled.out_of_order


def test_a_fixed_window_is_the_newest_n_turns_in_every_call() -> None:
    sends = _sends(5)
    calls = [_call(sends, q, list(range(max(1, q - 2), q))) for q in range(1, 6)]  # the last 2 turns
    told = judge(Trial("w", sends=sends, model_calls=calls))
    assert [x.missing for x in told] == [[], [], [], [1], [1, 2]]
    assert window(told) == 2
    # Losing the history once is not a window: the call for turn 5 kept 1 turn, turn 4's kept 2.
    calls[4] = _call(sends, 5, [4])
    assert window(judge(Trial("w", sends=sends, model_calls=calls))) is None
    # ... nor is keeping the oldest turns.
    calls[4] = _call(sends, 5, [1, 2])
    assert window(judge(Trial("w", sends=sends, model_calls=calls))) is None


def test_a_call_that_serves_no_send_of_the_trial_is_not_judged() -> None:
    sends = _sends(2)
    other = {"t_start": 1.0, "messages": [{"role": "user", "text": "someone else's chat"}]}
    assert judge(Trial("n", sends=sends, model_calls=[other])) == []
    assert judge(Trial("n", sends=sends)) == []


def test_a_model_fault_that_reached_no_call_of_its_send_leaves_the_trial_unknown() -> None:
    def trial(fault: str, outcome: str | None) -> Trial:
        sends = _sends(3)
        sends[1].under_fault = True
        calls = [_call(sends, q, list(range(1, q))) for q in (1, 2, 3) if q != 2 or outcome is not None]
        for c in calls:
            c["outcome"] = outcome if str(sends[1].text) in c["messages"][-1]["text"] else "whole"
        return Trial("a", sends=sends, fault=fault, model_calls=calls)

    assert fault_missed(trial("model_cut", "cut")) is None and fault_missed(trial("model_error", "error")) is None
    streamed = trial("model_cut", "whole")  # streamed, and still whole: not for want of a stream
    for c in streamed.model_calls or []:
        c["stream"] = True
    assert "answered whole, not cut: model_cut was not exercised" in str(fault_missed(streamed))
    unstreamed = trial("model_cut", "whole")
    assert "(the app did not stream the model's answer: nothing to cut)" in str(fault_missed(unstreamed))
    assert "no model call served the faulted send (turn 2)" in str(fault_missed(trial("model_error", None)))
    assert fault_missed(trial("latency", "whole")) is None  # not a model fault


def test_unserved_names_the_acknowledged_sends_no_call_carried() -> None:
    sends = _sends(3)
    t = Trial("u", sends=sends, model_calls=[_call(sends, 1, []), _call(sends, 3, [1, 2])])
    assert [s.turn for s in unserved(t)] == [2]
    sends[1].outcome = "fail"  # a send the page did not acknowledge owes no call
    assert unserved(t) == []
    # A double submit: the same message sent twice, one call carrying it serves both.
    twice = _sends(2)
    twice[1].text = twice[0].text
    assert unserved(Trial("d", sends=twice, model_calls=[_call(twice, 1, [])])) == []


def test_the_calls_of_a_trial_begin_a_second_before_its_first_send() -> None:
    assert calls_since(Trial("c", sends=_sends(2))) == 0.0  # first send at 1.0: not before 0
    late = _sends(2)
    late[0].t_invoke, late[1].t_invoke = 100.0, 101.0
    assert calls_since(Trial("c", sends=late)) == 99.0


def test_a_stream_is_the_models_words_only_if_it_is_a_whole_reply_to_the_letter() -> None:
    from lab.model.context import said_as_is

    calls = [{"outcome": "whole", "reply": "Paris is the capital."}, {"outcome": "cut", "reply": "Rome"}]
    assert said_as_is("Paris is the capital.\n", calls)  # spaces at its ends aside
    assert not said_as_is("Paris is the capital.\n[not saved: ResponseError]", calls)  # the app's own words
    assert not said_as_is("Rome", calls)  # a cut call's part is no whole reply
    assert not said_as_is("", [{"outcome": "whole", "reply": ""}])  # nothing said is no evidence
