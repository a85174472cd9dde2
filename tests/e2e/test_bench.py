"""`lab bench` at smoke size on a stack of its own: both loops run on both profiles, every
requested trial is measured or excluded, the figures are printed and written. What was measured,
never a ratio or a timeout: the bench measures, it does not judge."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import isolated_env, run_lab


def test_bench_measures_both_loops_on_both_profiles(tmp_path: Path) -> None:
    env = isolated_env(tmp_path / "run")
    try:
        res = run_lab(
            env,
            "bench",
            "--plain-runs",
            "2",
            "--trials",
            "4",
            "--standin-trials",
            "2",
            "--standin-rounds",
            "1",
            "--like-trials",
            "2",
            "--like-rounds",
            "1",
            "--reports",
            str(tmp_path / "reports"),
            timeout=900,
        )
    finally:
        run_lab(env, "down", timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    for line in (
        "plain loop, correct",
        "lab runner, correct",
        "plain loop, incident",
        "lab runner, incident",
        "excluded",
        "passing trials: lab",
        "failing trials: lab",
        "CPU while the lab ran",
        "the stand-in's cost (correct|none|settled|t5, no model latency)",
        "investigate against lab chaos, same experiment (correct|none|settled|t5; examples/chat-service.toml",
        "investigate's own time includes its waits: the settled read",
        "exit 0: both loops measured",
    ):
        assert line in res.stdout, line
    bench = json.loads(next((tmp_path / "reports").glob("bench-*/bench.json")).read_text())
    # The stand-in's cost: both sides ran the same trials (a machine may leave one unknown).
    assert {bench["standin"][side]["trials"] for side in ("fake", "standin")} == {2}, bench["standin"]
    # Investigate against lab chaos: both sides ran the same experiment's two trials; the
    # investigation's own phases (the settled read, the TTL reads) are printed beside chaos's.
    like = bench["like_with_like"]
    assert {like[side]["trials"] for side in ("chaos", "investigate")} == {2}, like
    assert {"settle", "ttl"} <= set(like["investigate"]["phases_ms"]), like["investigate"]
    by_name = {m["name"].split(" (")[0]: m for m in bench["measures"]}
    requested = {
        "plain loop, correct": 2,
        "lab runner, correct": 4,
        "plain loop, incident": 2,
        "lab runner, incident": 2,
    }
    assert {n: m["trials"] + m["timed_out"] for n, m in by_name.items()} == requested
    # Only the plain correct loop may exclude a repetition (its own timeout on a slow machine); a
    # slow lab trial is unknown, never failed.
    assert {n: m["timed_out"] for n, m in by_name.items() if n != "plain loop, correct"} == {
        "lab runner, correct": 0,
        "plain loop, incident": 0,
        "lab runner, incident": 0,
    }
    assert by_name["plain loop, correct"]["failed"] == 0  # no failure but a timeout
    assert by_name["lab runner, correct"]["failed"] == 0
    # The incident fails every counted trial: the plain loop by its expect timeout (kept: the cost
    # of a failing trial), the lab by what it reads in Redis.
    assert by_name["plain loop, incident"]["failed"] == 2
    lab_bad = by_name["lab runner, incident"]
    assert lab_bad["failed"] == lab_bad["trials"] - lab_bad["unknown"]
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
    assert set(bench["checks"]) == {
        "passing_ratio",
        "failing_ratio",
        "correct_300_s",
        "first_trial",
        "plain_correct_passed",
        "incident_failed",
    }
    assert bench["cpu_seconds"]["browser"] > 0 and bench["cpu_seconds"]["backend"] > 0
