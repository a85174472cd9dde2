"""lab.plan.ids: one scheme of trial ids and seeds for every command that plans trials."""

from __future__ import annotations

import pytest

from lab.investigate.run.experiments import TrialId
from lab.plan import ids
from lab.plan.schedule import Cell, plan_cell

CELL = Cell(("swallowed_errors",), "down", "settled", 4)  # a one-send fault: its turn is drawn per group


def test_a_trials_seed_depends_on_its_group_and_number_only() -> None:
    # Not drawn in sequence: a cell planned with 3 trials or 8 gives its first 3 the same seeds
    # and ids, and trial k's seed is the scheme's own, whatever came before it.
    three, eight = plan_cell(CELL, 3, 42, prefix="c001-"), plan_cell(CELL, 8, 42, prefix="c001-")
    assert [(p.trial_id, p.seed) for p in three] == [(p.trial_id, p.seed) for p in eight[:3]]
    assert [p.seed for p in eight] == [ids.trial_seed(42, k) for k in range(8)]
    assert len({p.seed for p in eight}) == 8
    # One-send faults hit the same turn in every trial of a group (they run in lockstep).
    assert len({p.fault_turn for p in eight}) == 1


def test_group_seeds_differ_by_run_key_and_round() -> None:
    seeds = {ids.group_seed(1, "a"), ids.group_seed(2, "a"), ids.group_seed(1, "b"), ids.group_seed(1, "a", 1)}
    assert len(seeds) == 4
    assert ids.group_seed(1, "a") == ids.group_seed(1, "a")


@pytest.mark.parametrize(
    ("prefix", "k", "width", "text"),
    [
        ("c003-", 17, 3, "c003-017"),
        ("r1-c003-", 2, 3, "r1-c003-002"),
        ("", 0, 3, "000"),
        ("e3-down-settled-", 1, 2, "e3-down-settled-01"),
    ],
)
def test_ids_are_the_groups_prefix_and_k_and_split_back(prefix: str, k: int, width: int, text: str) -> None:
    assert ids.trial_id(prefix, k, width) == text
    assert ids.split(text) == (prefix, k)


@pytest.mark.parametrize("bad", ["", "c003-", "e3-down-settled", "replay-x"])
def test_an_id_without_a_number_is_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        ids.split(bad)


def test_an_investigations_ids_and_seeds_are_the_schemes() -> None:
    assert TrialId(3, 1).seed(42) == ids.trial_seed(ids.group_seed(42, "e3"), 1)
    assert ids.split("e3-down-settled-01") == ("e3-down-settled-", 1)
