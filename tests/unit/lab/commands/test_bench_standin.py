"""The stand-in's cost in `lab bench` (lab.commands.bench_standin): medians per side, their ratio
against the bound, the model call's share of the ack phase -- and no figure from a side that
judged nothing."""

from __future__ import annotations

from lab.commands import bench_standin
from lab.model.checker import Result
from lab.model.history import Trial
from lab.model.outcome import TrialOutcome
from lab.plan.schedule import plan_cell


def _trial(seconds: float, ack_s: float, validity: str = "valid") -> TrialOutcome:
    o = TrialOutcome(None, Trial("x"), Result(validity), seconds=seconds)  # type: ignore[arg-type]
    o.phases = {"ack": ack_s, "open": 0.05}
    return o


def test_the_ratio_is_of_medians_so_one_stalled_trial_does_not_move_it() -> None:
    fake = [_trial(0.200, 0.030), _trial(0.210, 0.030), _trial(0.205, 0.030)]
    standin = [_trial(0.210, 0.040), _trial(0.214, 0.040), _trial(3.0, 0.040), _trial(9.0, 0.1, "unknown")]
    f = bench_standin.figures({"fake": fake, "standin": standin})
    assert f["fake"]["judged"] == 3 and f["standin"]["judged"] == 3
    assert abs(f["added"] - (0.214 / 0.205 - 1)) < 1e-9  # 3.0 s is one stall, 9 s unknown
    text = bench_standin.text(f)
    assert "fake 205 ms per trial, median of 3 judged; stand-in 214 ms (3 judged)" in text
    assert "+2.0 ms a send" in text
    assert f["own_ms"] == 10.0 and "+10.0 ms a trial, +4.9% of the fake's" in text  # 10 ms of 205


def test_a_side_with_no_judged_trial_gives_no_ratio() -> None:
    f = bench_standin.figures({"fake": [_trial(0.2, 0.03)], "standin": [_trial(0.3, 0.04, "unknown")]})
    assert f["added"] is None and "not measured" in bench_standin.text(f)


def test_both_sides_run_the_same_plans_with_no_model_latency() -> None:
    plans = bench_standin.instant(plan_cell(bench_standin.CELL, 3, 1))
    assert {p.llm_latency_ms for p in plans} == {0} and {p.headers["X-Lab-Llm-Latency-Ms"] for p in plans} == {"0"}


def test_the_verdict_is_the_intervals_not_the_medians_alone() -> None:
    f = {"bound": 0.05, "added": 0.02}
    assert bench_standin.verdict({**f, "added_ci95": [0.01, 0.04]}) == "within the 5% bound"
    assert bench_standin.verdict({**f, "added": 0.08, "added_ci95": [0.06, 0.1]}) == "over the 5% bound"
    across = bench_standin.verdict({**f, "added_ci95": [0.0, 0.07]})
    assert across.startswith("the median is under the 5% bound, the interval reaches across it")
    assert "reaches across" in bench_standin.verdict({**f, "added_ci95": None})


def test_twins_share_a_plan_and_alternate_which_runs_first() -> None:
    plans = plan_cell(bench_standin.CELL, 4, 1)
    order = bench_standin.twins(plans)
    firsts = ["X-Lab-Model" in a.headers for a, _ in order]
    assert firsts == [True, False, True, False]  # ABBA: fake first, then the stand-in first
    assert [["X-Lab-Model" in b.headers for _, b in order]] == [[not x for x in firsts]]
    for (a, b), p in zip(order, plans):
        assert a.messages == b.messages == p.messages and a.seed == b.seed == p.seed
        assert {a.trial_id, b.trial_id} == {p.trial_id + "f", p.trial_id + "s"}
    assert ["X-Lab-Model" in a.headers for a, _ in bench_standin.twins(plans, first=1)] == [False, True, False, True]
