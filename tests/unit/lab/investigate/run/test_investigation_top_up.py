"""An experiment's rates count judged trials only: an unknown trial is replaced by another until
--trials were judged, up to TOP_UP_FACTOR x --trials (one trial of one experiment, unknown on a
busy machine, gets two more tries); a replay or a window's round runs exactly what it asked for."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from lab.investigate.run import investigation as run_mod
from lab.investigate.run.experiments import Experiment
from lab.investigate.run.investigation import TOP_UP_FACTOR, Investigation
from lab.model.checker import Result
from lab.model.history import Trial
from lab.model.outcome import TrialOutcome

EXP = Experiment("none", (), "mid_stream", 3, "a cut mid-reply")


class Prober:
    """Trials unknown while ``unknown(k)`` says so (k: the trial's number in its experiment)."""

    fault_targets = None

    def __init__(self, unknown: Any) -> None:
        self.unknown, self.ran = unknown, []  # type: list[str]

    async def trial(self, exp: Experiment, tid: str, seed: int, step: Any) -> Trial:
        self.ran.append(tid)
        t = Trial(tid, refresh=exp.refresh, turns=exp.turns)
        t.unknown = "the mid-stream window was not tested" if self.unknown(int(tid.rsplit("-", 1)[1])) else None
        return t


def _run(
    unknown: Any, trials: int = 4, replay: str | None = None, **kw: Any
) -> tuple[list[str], list[TrialOutcome], str]:
    spec = SimpleNamespace(file=Path("app.toml"))
    inv = Investigation(spec, None, [(5, EXP)], trials, Path("."), seed=1, replay_of=replay, out=io.StringIO())  # type: ignore[arg-type]
    prober, done = Prober(unknown), []  # type: Prober, list[TrialOutcome]
    asyncio.run(inv._experiment(prober, 5, EXP, done, **kw))  # type: ignore[arg-type]
    return prober.ran, done, inv.out.getvalue()  # type: ignore[attr-defined]


@pytest.fixture(autouse=True)
def _checker(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checker's verdict here is the trial's own: unknown or valid."""
    monkeypatch.setattr(run_mod, "check_safe", lambda t: Result("unknown" if t.unknown else "valid"))


def test_unknown_trials_are_replaced_until_enough_were_judged() -> None:
    ran, done, out = _run(lambda k: k in (1, 2, 4))
    assert ran == [f"e5-none-mid_stream-{k:02d}" for k in range(7)]
    assert sum(o.result.validity == "valid" for o in done) == 4
    assert "7 trials" in out and "3 unknown" in out and "3 more run in their place" in out


def test_the_top_up_stops_at_its_cap() -> None:
    ran, done, _ = _run(lambda k: k != 0, trials=2)
    assert len(ran) == TOP_UP_FACTOR * 2 and sum(o.result.validity == "valid" for o in done) == 1


def test_an_experiment_that_judges_nothing_stops_at_the_cap() -> None:
    ran, _, _ = _run(lambda k: True)
    assert len(ran) == TOP_UP_FACTOR * 4


def test_a_replay_and_a_windows_round_run_what_they_asked_for() -> None:
    assert len(_run(lambda k: k == 0, replay="e5-none-mid_stream-00")[0]) == 4
    ran, _, _ = _run(lambda k: k == 2, start=2, count=2)
    assert ran == ["e5-none-mid_stream-02", "e5-none-mid_stream-03"]
