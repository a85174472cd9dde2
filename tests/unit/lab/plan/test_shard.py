"""Shards of the chaos matrix: whole columns, every cell once, the unsharded run's plans."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.plan import shard
from lab.commands.chaos import ChaosRun, build_matrix, parse_only
from lab.common.errors import UsageError


def _run(cells, k: int | None, n: int | None) -> ChaosRun:  # type: ignore[no-untyped-def]
    return ChaosRun(None, cells, 5, 1234, Path("unused"), shard=(k, n) if k else None)  # type: ignore[arg-type]


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_partition_is_whole_columns_every_cell_once(n: int) -> None:
    cells = build_matrix({})
    parts = shard.partition(cells, n)
    assert sorted(i for p in parts for i in p) == list(range(len(cells)))
    home = {}
    for k, p in enumerate(parts):
        for i in p:
            assert home.setdefault(shard.column(cells[i]), k) == k  # a column never splits
    assert parts == shard.partition(cells, n)  # deterministic
    loads = [len(p) for p in parts]
    assert all(loads), loads


def test_each_shard_plans_the_unsharded_runs_trials() -> None:
    cells = build_matrix(parse_only("profile=correct|swallowed_errors;fault=none|down;refresh=settled|after_ack"))
    whole = {
        c.cell_id: [(p.trial_id, p.seed, p.messages) for p in plans] for c, plans in _run(cells, None, None).plans()
    }
    for n in (2, 3):
        got: dict[str, object] = {}
        for k in range(1, n + 1):
            for c, plans in _run(cells, k, n).plans():
                assert c.cell_id not in got
                got[c.cell_id] = [(p.trial_id, p.seed, p.messages) for p in plans]
        assert got == whole


def test_cell_seed_depends_on_the_seed_cell_and_round_only() -> None:
    a, b = build_matrix({})[:2]
    assert shard.cell_seed(1, a) == shard.cell_seed(1, a) != shard.cell_seed(2, a)
    assert shard.cell_seed(1, a) != shard.cell_seed(1, b) and shard.cell_seed(1, a, 1) != shard.cell_seed(1, a)


def test_fingerprint_names_the_matrix_and_its_sizes() -> None:
    cells = build_matrix({})
    assert shard.fingerprint(cells, 5, 25) == shard.fingerprint(list(cells), 5, 25)
    assert shard.fingerprint(cells, 5, 25) != shard.fingerprint(cells, 6, 25)
    assert shard.fingerprint(cells, 5, 25) != shard.fingerprint(cells[:-1], 5, 25)


@pytest.mark.parametrize("text", ["0/3", "4/3", "2", "a/b", "1/65", ""])
def test_bad_shard_names_the_form(text: str) -> None:
    with pytest.raises(UsageError, match="is not K/N"):
        shard.parse(text)
