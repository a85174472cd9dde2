"""What the stand-in adds to a trial (lab.report.model_side.standin_cost): the time its
answered calls took against the trials' wall time; a call the lab's fault held or failed is the
fault's time, not the stand-in's, and trials without a model add nothing."""

from __future__ import annotations

from lab.report.model_side import standin_cost
from lab.model.checker import Result
from lab.model.history import Trial
from lab.model.outcome import TrialOutcome


def _outcome(calls: list[tuple[float, float, str]] | None, seconds: float) -> TrialOutcome:
    t = Trial("e1-none-settled-00")
    t.model_calls = None if calls is None else [{"t_start": a, "t_end": b, "outcome": o} for a, b, o in calls]
    return TrialOutcome(None, t, Result("valid"), seconds=seconds)


def test_the_share_counts_answered_calls_against_the_wall_time_of_trials_with_a_model() -> None:
    done = [
        _outcome([(10.0, 10.02, "whole"), (11.0, 11.04, "whole"), (12.0, 17.0, "held")], 2.0),
        _outcome(None, 5.0),  # no model: neither its time nor its calls
    ]
    cost = standin_cost(done)
    assert cost["calls"] == 2
    assert abs(cost["call_ms_mean"] - 30.0) < 1e-6 and abs(cost["share"] - 0.03) < 1e-9


def test_no_calls_no_cost() -> None:
    assert standin_cost([_outcome([], 1.0)]) == {"calls": 0, "call_ms_mean": 0.0, "planned_ms_mean": 0.0, "share": 0.0}


def test_the_wait_the_plan_asked_for_is_the_models_not_the_stand_ins() -> None:
    t = Trial("c000-000")
    t.model_calls = [
        {"t_start": 10.0, "t_end": 10.032, "outcome": "whole", "stream": False, "behaviour": {"ttft_ms": 30}},
        # streamed: 20 ms to the first token, then 3 tokens 10 ms apart, 4 ms of its own
        {
            "t_start": 11.0,
            "t_end": 11.054,
            "outcome": "whole",
            "stream": True,
            "tokens_sent": 3,
            "behaviour": {"ttft_ms": 20, "token_ms": 10},
        },
    ]
    cost = standin_cost([TrialOutcome(None, t, Result("valid"), seconds=1.0)])
    assert abs(cost["call_ms_mean"] - 3.0) < 1e-6  # (2 + 4) / 2
    assert abs(cost["planned_ms_mean"] - 40.0) < 1e-6  # (30 + 50) / 2
    assert abs(cost["share"] - 0.006) < 1e-9
