"""Window sweeps and their knobs: each value is a valid cell, carried into the plan and the
replay line; bad values are refused naming the valid ones."""

from __future__ import annotations

import shlex

import pytest

from lab.common.errors import UsageError
from lab.plan import sweeps
from lab.plan.knobs import parse_knob
from lab.plan.schedule import Cell, plan_trial


@pytest.mark.parametrize("name", sorted(sweeps.SWEEPS))
def test_every_default_value_of_every_sweep_is_a_cell(name: str) -> None:
    s = sweeps.get(name)
    cells = [s.cell(("fire_and_forget",), v) for v in s.values]
    assert len({c.cell_id for c in cells}) == len(s.values)  # the value is in the cell's id


def test_refresh_delay_reaches_the_plan_and_its_replay_line() -> None:
    cell = sweeps.get("refresh_delay_ms").cell(("fire_and_forget",), 30)
    assert cell.refresh == "after_ack" and cell.cell_id.endswith("+refresh_delay_ms=30")
    plan = plan_trial(cell, 7, "t0")
    assert plan.refresh_delay_ms == 30 and plan.tab_gap_ms is None
    argv = shlex.split(plan.replay_command())
    assert argv[argv.index("--knob") + 1] == "refresh_delay_ms=30"


def test_tab_gap_reaches_the_plan() -> None:
    plan = plan_trial(sweeps.get("tab_gap_ms").cell(("read_modify_write",), 100), 7, "t0")
    assert plan.cell.refresh == "two_tabs" and plan.tab_gap_ms == 100


def test_age_sweep_paces_the_turns_under_the_age_and_holds_the_refresh_for_it() -> None:
    """span_pct=150 with the sweep's 8 s TTL: the refresh not before 12 s; the planned turns (3
    model latencies, 2 think times) end TTL/4 before it, and no write gap nears TTL/2."""
    cell = sweeps.get("age_ttl_pct").cell(("ttl_set_once",), 150)
    assert cell.fault == "ttl_elapse" and cell.params == {"span_pct": 150, "ttl_ms": 8000}
    plan = plan_trial(cell, 7, "t0")
    assert plan.refresh_at_age_ms == 12000
    assert 3 * plan.llm_latency_ms + 2 * plan.think_ms == 12000 - 2000
    assert plan.llm_latency_ms < 4000 and plan.think_ms < 4000
    young = plan_trial(sweeps.get("age_ttl_pct").cell(("ttl_set_once",), 25), 7, "t0")
    assert (young.llm_latency_ms, young.think_ms, young.refresh_at_age_ms) == (0, 0, 2000)


def test_the_age_sweep_refuses_another_fault() -> None:
    with pytest.raises(UsageError, match="runs under the fault ttl_elapse"):
        sweeps.get("age_ttl_pct").cell(("ttl_set_once",), 50, "latency")


@pytest.mark.parametrize(
    "text, fragment", [(" , ", "no value given"), ("1,x", "expected whole numbers"), ("0,99999", "out of range")]
)
def test_bad_values_are_refused(text: str, fragment: str) -> None:
    with pytest.raises(UsageError, match=fragment):
        sweeps.parse_values(text, sweeps.get("refresh_delay_ms"))


def test_values_are_sorted_and_unique_and_one_is_a_points_replay() -> None:
    assert sweeps.parse_values("100,0,10,10", sweeps.get("tab_gap_ms")) == (0, 10, 100)
    assert sweeps.parse_values("30", sweeps.get("tab_gap_ms")) == (30,)


def test_an_unknown_sweep_names_the_valid_ones() -> None:
    with pytest.raises(UsageError) as e:
        sweeps.get("moon_phase")
    assert "refresh_delay_ms" in str(e.value) + str(getattr(e.value, "hint", ""))


def test_a_knob_acts_at_its_own_refresh_point_only() -> None:
    with pytest.raises(UsageError, match="acts at the refresh point after_ack"):
        Cell(("fire_and_forget",), "none", "settled", knobs=(("refresh_delay_ms", 10),))
    with pytest.raises(UsageError, match="valid names: refresh_delay_ms, tab_gap_ms"):
        parse_knob("warp=3")
    assert parse_knob("tab_gap_ms=25") == ("tab_gap_ms", 25)


def test_a_fault_onset_needs_a_one_send_fault_and_reaches_the_plan() -> None:
    cell = sweeps.get("fault_onset_ms").cell(("swallowed_errors",), 30)
    assert cell.fault == "down" and cell.cell_id.endswith("+fault_onset_ms=30")
    plan = plan_trial(cell, 7, "t0")
    assert plan.fault_onset_ms == 30 and 1 <= plan.fault_turn < cell.turns
    with pytest.raises(UsageError, match="fault_onset_ms needs a one-send fault"):
        Cell(("swallowed_errors",), "latency", "settled", knobs=(("fault_onset_ms", 10),))


def test_a_points_unknown_trials_are_replaced_until_its_first_round_is_judged() -> None:
    from lab.plan.sweeps import more_trials

    args = {"first": 5, "max_trials": 5, "max_width": 0.5}
    assert more_trials(0, 0, 1.0, **args) == 5  # the first round
    assert more_trials(5, 1, 1.0, **args) == 4  # 4 unknown: replaced
    assert more_trials(14, 3, 1.0, **args) == 1  # bounded: 3 x the most trials in all
    assert more_trials(15, 3, 1.0, **args) == 0
    assert more_trials(5, 5, 1.0, **args) == 0  # judged enough, at the most trials
    wide = {"first": 5, "max_trials": 15, "max_width": 0.3}
    assert more_trials(5, 5, 0.5, **wide) == 5 and more_trials(5, 5, 0.2, **wide) == 0  # a wide interval: more
