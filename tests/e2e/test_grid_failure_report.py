"""A deliberately wrong expectation on a real cell: the failure keeps the trial's artifacts in
pytest-playwright's layout and ends with a one-line replay command."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

INNER = """
from pathlib import Path

from lab.expect import assert_cell
from lab.runner.runner import Runner
from lab.plan.schedule import Cell, plan_cell


def test_wrong_expectation(lab_stack, request, tmp_path):
    cell = Cell(("fire_and_forget",), "none", "after_ack")
    [outcome] = Runner(lab_stack, tmp_path).run([(cell, plan_cell(cell, 1, 5))])
    assert_cell(outcome, request.node.nodeid, lost=0)   # wrong: fire_and_forget loses replies
"""


def test_wrong_expectation_leaves_artifacts_and_a_replay_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=INNER)
    res = pytester.runpytest_subprocess()
    res.assert_outcomes(failed=1)
    out = res.stdout.str()
    assert "lost: 1/1 trials, expected 0" in out
    # The lab beside the running Python: by its full path, as this test's folder is outside the checkout.
    replay = [line for line in out.splitlines() if f"replay: {Path(sys.executable).parent / 'lab'} replay" in line]
    assert replay and "--profile fire_and_forget --fault none --refresh after_ack" in replay[0], out
    folder = pytester.path / "test-results" / "test_inner.py-test_wrong_expectation"
    trial = folder / "000"
    for name in (
        "trial.json",
        "screenshot.png",
        "trace-1.zip",
        "network.jsonl",
        "backend-events.jsonl",
        "redis.json",
        "toxics.json",
    ):
        assert (trial / name).is_file(), f"missing artifact {name} in {trial}"
