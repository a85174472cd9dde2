"""`lab bench` at smoke size on a stack of its own: both loops run on both profiles, the figures
are printed and written, and the baselines behave (correct passes, incident fails)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import isolated_env, run_lab


def test_bench_prints_both_loops_and_the_ratios(tmp_path: Path) -> None:
    env = isolated_env(tmp_path / "run")
    try:
        res = run_lab(
            env, "bench", "--plain-runs", "2", "--trials", "4", "--reports", str(tmp_path / "reports"), timeout=900
        )
    finally:
        run_lab(env, "down", timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    for line in (
        "plain loop, correct",
        "lab runner, correct",
        "plain loop, incident",
        "lab runner, incident",
        "passing trials: lab",
        "failing trials: lab",
        "CPU while the lab ran",
    ):
        assert line in res.stdout, line
    bench = json.loads(next((tmp_path / "reports").glob("bench-*/bench.json")).read_text())
    by_name = {m["name"].split(" (")[0]: m for m in bench["measures"]}
    assert by_name["plain loop, correct"]["failed"] == 0 and by_name["plain loop, correct"]["trials"] == 2
    assert by_name["plain loop, incident"]["failed"] == 2
    assert by_name["lab runner, correct"]["trials"] == 4 and by_name["lab runner, correct"]["failed"] == 0
    assert by_name["lab runner, incident"]["failed"] == 2
    assert set(bench["first_trial"]) == {
        "fire_and_forget",
        "ttl_set_once",
        "shared_loop_client",
        "blind_retry",
        "swallowed_errors",
        "save_at_stream_end",
        "session_cookie",
        "read_modify_write",
    }
    assert bench["cpu_seconds"]["browser"] > 0 and bench["cpu_seconds"]["backend"] > 0
