"""The one table of experiments: each row a valid cell, serving lab chaos (a defect it exposes),
lab investigate (what a spec must have), or both; investigate's numbering stays put (a replay's
trial id indexes it)."""

from __future__ import annotations

from lab.commands.chaos import DEFAULT_PAIRS
from lab.investigate.run import experiments as inv
from lab.plan.experiments import EVERY, TABLE, chaos_rows, investigate_rows
from lab.plan.schedule import Cell
from services.chat.defects import REGISTRY as DEFECTS


def test_every_row_is_a_cell_and_serves_a_command() -> None:
    for r in TABLE:
        Cell((), r.fault, r.refresh, 12 if r.long else 5, r.params)  # raises on a bad row
        assert r.params == tuple(sorted(r.params)), r
        assert r.exposes or r.needs is not None, f"{r.fault}/{r.refresh} serves neither command"
        assert r.exposes == EVERY or set(r.exposes) <= set(DEFECTS), r.exposes
        assert r.needs in (None, "", "streams", "unstreamed", "ids", "model")


def test_both_commands_share_the_rows_they_both_run() -> None:
    both = [r for r in TABLE if r.exposes and r.needs is not None]
    assert len(both) == 7  # the rows chaos's matrix and investigate's plan had written twice
    assert [(f, r) for f, _, r, _ in DEFAULT_PAIRS] == [(r.fault, r.refresh) for r in chaos_rows()]
    assert sum(e is None for *_, e in DEFAULT_PAIRS) == 1  # the incident's own cell: every profile


def test_investigates_experiment_numbers_stay_put() -> None:
    """A replay line names e<N>: the Nth experiment of the full plan, whatever the table gained."""
    plan = inv.default_plan(3, streams=True, ids=True, model=True)
    rows = [r for r in investigate_rows() if r.needs != "unstreamed"]  # a spec that streams
    assert [(e.fault, e.refresh) for e in plan] == [(r.fault, r.refresh) for r in rows]
    assert [(e.fault, e.refresh) for e in plan[:5]] == [
        ("none", "settled"),
        ("latency", "after_ack"),
        ("drop", "settled"),
        ("down", "settled"),
        ("none", "browser_restart"),
    ]
    assert [(e.fault, e.refresh) for e in plan[-4:]] == [
        ("latency", "in_flight"),
        ("latency", "after_ack"),
        ("write_refused", "settled"),
        ("write_refused", "settled"),
    ]
    assert dict(plan[-3].params)["stream"] == "upstream"  # appended: the numbers before it stay put
    # investigate's: the send's first write; the first once its answer has begun (a stream's)
    assert [dict(e.params) for e in plan[-2:]] == [{"at": "write"}, {"at": "answer"}]
    # A spec without a stream, ids or a model: those rows left out, the rest in the same order,
    # and the row for an answer that does not stream appended: the first write after the send's first.
    plain = inv.default_plan(3)
    assert [e for e in plan if e in plain] == plain[:-1] and len(plain) == len(plan) - 6 + 1
    assert (plain[-1].fault, dict(plain[-1].params)) == ("write_refused", {"at": "later"})
