"""lab chaos's top-up rounds: a cell whose every trial was unknown gets another round (seen on a
quiet machine: shared_loop_client's wedged client failed every send of a cell's 5 trials, and
the run exited 2), bounded by max_trials with its unknown trials counted."""

from __future__ import annotations

from typing import Any

from lab.commands.chaos import ChaosRun
from lab.model.checker import Result
from lab.model.history import Trial
from lab.model.outcome import CellOutcome, TrialOutcome
from lab.plan.schedule import Cell, parse_profile


def _unknown(tid: str) -> TrialOutcome:
    return TrialOutcome(None, Trial(tid), Result("unknown", reasons=["no send was acknowledged: x"]))  # type: ignore[arg-type]


def _run(cell: Cell, **kw: Any) -> ChaosRun:
    return ChaosRun(stack=None, cells=[cell], trials=5, seed=1, reports_root=None, **kw)  # type: ignore[arg-type]


def test_an_all_unknown_cell_gets_another_round_until_max_trials() -> None:
    cell = Cell(parse_profile("incident"), "none", "mid_stream", 5)
    o = CellOutcome(cell, [_unknown(f"c000-{i:03d}") for i in range(5)])
    (planned_cell, plans), *rest = _run(cell)._top_up([o], 1)
    assert rest == [] and planned_cell == cell and len(plans) == 5
    assert all(p.trial_id.startswith("r1-c000-") for p in plans)
    # 23 trials so far, all unknown: 2 more reach max_trials (25); at 25, none.
    o.trials = [_unknown(f"x{i}") for i in range(23)]
    assert [len(p) for _, p in _run(cell)._top_up([o], 2)] == [2]
    o.trials = [_unknown(f"x{i}") for i in range(25)]
    assert _run(cell)._top_up([o], 3) == []
