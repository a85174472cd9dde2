"""model_stall: the stand-in's plan (no first token for hold_ms), its bounds, and a stalled call
counted as the fault exercised whichever side hung up first."""

from __future__ import annotations

import pytest

from lab.common.errors import UsageError
from lab.faults import make
from lab.model.context import fault_missed
from lab.model.history import Send, Trial


def test_the_plan_holds_the_calls_with_no_first_token() -> None:
    assert make("model_stall", hold_ms=3000).plan() == {"fault": "no_first_token", "hold_ms": 3000}
    with pytest.raises(UsageError, match="1000 to 60000 ms"):
        make("model_stall", hold_ms=10).check()


def _trial(outcome: str) -> Trial:
    s = Send("m2", "chaoslab probe e11 turn 2", 2, under_fault=True)
    s.complete("info", 502, "", 2.0)
    call = {"messages": [{"role": "user", "text": s.text}], "outcome": outcome}
    return Trial("e11-model_stall-settled-00", sends=[s], fault="model_stall", model_calls=[call])


@pytest.mark.parametrize("outcome", ["held", "client_gone"])
def test_a_stalled_call_exercised_the_fault(outcome: str) -> None:
    assert fault_missed(_trial(outcome)) is None


def test_a_call_answered_whole_did_not() -> None:
    why = fault_missed(_trial("whole"))
    assert why is not None and "not held or client_gone" in why
