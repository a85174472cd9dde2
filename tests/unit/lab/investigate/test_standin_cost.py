"""What the stand-in adds to a trial (lab.investigate.reporting.standin_cost): the time its
answered calls took against the trials' wall time; a call the lab's fault held or failed is the
fault's time, not the stand-in's, and trials without a model add nothing."""

from __future__ import annotations

from lab.investigate.reporting import standin_cost
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
    assert standin_cost([_outcome([], 1.0)]) == {"calls": 0, "call_ms_mean": 0.0, "share": 0.0}
