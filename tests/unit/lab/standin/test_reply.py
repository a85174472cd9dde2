"""The stand-in's reply: the turn as the call sees it and what the user first said -- a call
given the conversation without its history answers "turn 1" -- and a length the lab sets."""

from __future__ import annotations

import pytest

from lab.standin.behaviour import Behaviour, BehaviourError, Plans
from lab.standin.reply import FILLER, Message, reply_text, tokens

CHAT = [
    Message("system", "You are helpful."),
    Message("user", "Hi, I am Ada and I like chess"),
    Message("assistant", "Turn 1 as I see it ..."),
    Message("user", "What is my name?"),
]


def test_the_reply_shows_the_memory_the_call_carried() -> None:
    assert reply_text(CHAT) == (
        'Turn 2 as I see it. You first said "Hi, I am Ada and I like..."; just now you said "What is my...".'
    )
    # The same question without its history: amnesia, as the incident's user saw it.
    assert reply_text(CHAT[-1:]).startswith("Turn 1 as I see it: this is where our conversation starts.")
    assert reply_text(CHAT) == reply_text(list(CHAT))  # deterministic
    long = reply_text([Message("user", "x" * 100 + " z"), Message("user", "y")])
    assert '"' + "x" * 60 + '..."' in long


def test_no_reply_carries_a_message_whole() -> None:
    # The lab finds a turn by its unique text: a reply quoting it whole would be that turn again.
    for said in ("chaoslab probe e0-none-settled-00 turn 1 abc123", "Hello", "a b", "x" * 90):
        reply = reply_text([Message("user", said), Message("user", "next " + said)])
        assert said not in reply and ("next " + said) not in reply


def test_tokens_join_back_to_the_reply_and_take_the_length_asked() -> None:
    text = reply_text(CHAT)
    assert "".join(tokens(text)) == text
    assert len(tokens(text, 3)) == 3 and "".join(tokens(text, 3)) == "Turn 2 as "
    padded = tokens(text, 40)
    assert len(padded) == 40 and padded[-1] == FILLER and "".join(padded).startswith(text + " ")


def test_a_plan_matches_by_the_last_user_text_and_the_latest_wins() -> None:
    plans = Plans()
    assert plans.find("anything") == (None, Behaviour())
    plans.set("trial-7", Behaviour(ttft_ms=50))
    plans.set("trial-7 turn 2", Behaviour(fault="cut"))
    assert plans.find("chaoslab probe trial-7 turn 2 x") == ("trial-7 turn 2", Behaviour(fault="cut"))
    assert plans.find("chaoslab probe trial-7 turn 1 x") == ("trial-7", Behaviour(ttft_ms=50))
    plans.clear("trial-7 turn 2")  # one plan dropped, the other kept
    assert plans.find("chaoslab probe trial-7 turn 2 x") == ("trial-7", Behaviour(ttft_ms=50))
    plans.clear()
    assert plans.find("trial-7")[0] is None


def test_a_plan_for_the_first_calls_only_answers_each_message_that_often() -> None:
    plans = Plans()
    plans.set("probe", Behaviour(fault="server_error", times=1))
    assert plans.find("probe a")[1].fault == "server_error"  # a's first call fails
    assert plans.find("probe b")[1].fault == "server_error"  # and b's, counted apart
    assert plans.find("probe a") == (None, Behaviour())  # a's retry: the provider recovered
    plans.set("probe", Behaviour(fault="server_error", times=1))  # set again: counted afresh
    assert plans.find("probe a")[1].fault == "server_error"


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"fault": "boom"}, "valid faults are rate_limit, server_error, overloaded, cut, no_first_token"),
        ({"ttft_ms": -1}, "ttft_ms=-1: give a whole number from 0 to 120000"),
        ({"tokens": 0}, "tokens=0: give a whole number from 1 to 4096"),
        ({"times": 0}, "times=0: give a whole number from 1 to 100, or leave it out"),
        ({"latency": 5}, "unknown field(s) latency: valid fields are"),
    ],
)
def test_a_plan_it_cannot_follow_names_the_bad_value_and_the_valid_ones(data: dict[str, object], says: str) -> None:
    with pytest.raises(BehaviourError, match=__import__("re").escape(says)):
        Behaviour.from_json(data)
