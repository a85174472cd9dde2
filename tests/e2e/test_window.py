"""`lab window` on stacks of their own, at smoke size (two values, up to 5 trials a point): the
three windows the incident's patterns come down to, each with the correct profile at 0 beside
it -- a lost update that needs the tabs' sends close together, a TTL set once that loses only a
conversation older than the TTL, and a write never awaited that no wait after the answer saves."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from tests.cleanup import lab_down_after
from tests.helpers import isolated_env, run_lab


def _window(tmp_path: Path, *args: str) -> tuple[dict[str, Any], str, Path]:
    env = isolated_env(tmp_path / "run")
    reports = tmp_path / "reports"
    try:
        res = run_lab(env, "window", *args, "--max-trials", "5", "--seed", "11", "--reports", str(reports), timeout=900)
    finally:
        run_lab(env, "down", timeout=60)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    folder = next(reports.glob("window-*"))
    return json.loads((folder / "results.json").read_text()), out, folder


def _point(results: dict[str, Any], role: str, value: int) -> dict[str, Any]:
    p = next(p for p in results["curves"][role] if p["value"] == value)
    assert p["n"] >= 3, f"{role} at {value}: only {p['n']} judged trials ({p['why_unknown']})"
    return p


def _correct_lost_nothing(results: dict[str, Any]) -> None:
    for p in results["curves"]["correct"]:
        assert p["k"] == 0 and p["n"] >= 3, p
    assert results["window"]["correct"].startswith("no loss at any value tried")


def test_a_lost_update_needs_the_tabs_close_together(tmp_path: Path) -> None:
    results, out, folder = _window(
        tmp_path, "--profile", "read_modify_write", "--vary", "tab_gap_ms", "--values", "0,1000"
    )
    together, apart = _point(results, "defect", 0), _point(results, "defect", 1000)
    assert together["k"] >= 0.6 * together["n"] and apart["k"] == 0, results["curves"]["defect"]
    assert together["replay"] and "--knob tab_gap_ms=0" in together["replay"][0]
    _correct_lost_nothing(results)
    words = "loses a turn when the second tab sends within 0-1000 ms of the first"
    assert results["window"]["defect"].startswith(words) and words in out
    svg = (folder / "report.html").read_text().split("<svg", 1)[1].split("</svg>", 1)[0]
    curves = ET.fromstring("<svg" + svg + "</svg>").iter("polyline")
    assert {c.get("class") for c in curves} == {"curve defect", "curve correct"}


def test_a_ttl_set_once_loses_only_a_conversation_older_than_the_ttl(tmp_path: Path) -> None:
    results, _out, _folder = _window(
        tmp_path, "--profile", "ttl_set_once", "--vary", "age_ttl_pct", "--values", "50,150"
    )
    young, old = _point(results, "defect", 50), _point(results, "defect", 150)
    assert young["k"] == 0 and old["k"] >= 0.6 * old["n"], results["curves"]["defect"]
    _correct_lost_nothing(results)
    assert results["window"]["defect"].startswith("loses the conversation once it is older than 50-150 % of its TTL")


def test_no_wait_after_the_answer_saves_a_write_never_awaited(tmp_path: Path) -> None:
    results, _out, _folder = _window(
        tmp_path, "--profile", "fire_and_forget", "--vary", "refresh_delay_ms", "--values", "0,300"
    )
    for v in (0, 300):
        p = _point(results, "defect", v)
        assert p["k"] == p["n"], p
    _correct_lost_nothing(results)
    assert results["window"]["defect"] == "loses the turn at every delay tried (0-300 ms): no wait saves it"


def _target_window(
    tmp_path: Path, *sets: str, vary: str = "refresh_delay_ms", values: str = "0,3000"
) -> tuple[dict[str, Any], str]:
    from tests.e2e.investigating import FOREIGN, investigate_env

    env, port = investigate_env(tmp_path)
    reports = tmp_path / "reports"
    set_args = [x for s in (f"http.port={port}", *sets) for x in ("--set", s)]
    with lab_down_after(env):  # the target, Redis and Toxiproxy of a timed-out run
        res = run_lab(
            env,
            "window",
            "--target",
            str(FOREIGN),
            *set_args,
            "--vary",
            vary,
            "--values",
            values,
            "--max-trials",
            "5",
            "--seed",
            "11",
            "--reports",
            str(reports),
            timeout=900,
        )
        out = res.stdout + res.stderr
        assert res.returncode == 0, out
    return json.loads(next(reports.glob("*-window-*/results.json")).read_text()), out


def test_an_apps_write_after_the_answer_is_a_window_of_stale_reads_not_a_loss(tmp_path: Path) -> None:
    """The foreign app's write_after_answer stores the turn in three awaited commands after the
    answer; under 300 ms of latency a refresh at once shows it missing, one 3 s later does not,
    and the settled read always has it (stale, never lost)."""
    results, out = _target_window(tmp_path, "start.env.FOREIGN_BUGS=write_after_answer")
    at_once, later = _point(results, "stale", 0), _point(results, "stale", 3000)
    assert at_once["k"] >= 0.6 * at_once["n"] and later["k"] == 0, results["curves"]["stale"]
    assert all(p["k"] == 0 for p in results["curves"]["lost"]), results["curves"]["lost"]
    assert results["window"]["stale"].startswith(
        "shows the turn missing when the refresh comes within 0-3000 ms of the answer"
    ), out
    assert "--values 0 " in at_once["replay"][0]


def test_an_app_without_the_bug_has_no_window(tmp_path: Path) -> None:
    results, _out = _target_window(tmp_path)
    for kind in ("stale", "lost"):
        assert all(p["k"] == 0 and p["n"] >= 3 for p in results["curves"][kind]), results["curves"][kind]
    assert results["window"]["stale"].startswith("no stale read at any value tried")


def test_errors_swallowed_lose_the_turn_only_when_the_fault_meets_its_writes(tmp_path: Path) -> None:
    """Redis cut off at the send (onset 0): swallowed_errors answers as if saved and the turn
    is lost; cut off 1 s later, after the turn's writes, nothing is. The correct profile answers
    503 for a failed write (the page's retry stores it): nothing lost at either onset."""
    results, _out, _folder = _window(
        tmp_path, "--profile", "swallowed_errors", "--vary", "fault_onset_ms", "--values", "0,1000"
    )
    at_send, after = _point(results, "defect", 0), _point(results, "defect", 1000)
    assert at_send["k"] >= 0.6 * at_send["n"] and after["k"] == 0, results["curves"]["defect"]
    _correct_lost_nothing(results)
    assert results["window"]["defect"].startswith("loses the turn when the fault comes within 0-1000 ms of the send")


def test_an_apps_lost_update_needs_its_tabs_close_together(tmp_path: Path) -> None:
    """The foreign app's read_modify_write (GET, add, SET of one JSON document), two tabs under
    100 ms of latency: the second tab at once loses a turn in every trial, one 1 s later in none
    (its GET comes after the first tab's SET)."""
    results, out = _target_window(
        tmp_path, "start.env.FOREIGN_BUGS=read_modify_write", vary="tab_gap_ms", values="0,1000"
    )
    lost = {p["value"]: p for p in results["curves"]["lost"]}
    assert lost[0]["k"] == lost[0]["n"] >= 5 and lost[1000]["k"] == 0 and lost[1000]["n"] >= 5, lost
    assert "stale" not in results["curves"] and results["window"]["lost"].startswith(
        "loses a turn when the second tab sends within 0-1000 ms of the first"
    ), results["window"]
    assert "tab_gap_ms" in out


def test_an_apps_capped_history_loses_only_longer_conversations(tmp_path: Path) -> None:
    """cap_history keeps the newest 4 rows: 2 turns are kept whole, 3 lose the first (no fault);
    the app without the cap keeps both lengths."""
    results, _ = _target_window(tmp_path, "start.env.FOREIGN_BUGS=cap_history", vary="turns", values="2,3")
    lost = {p["value"]: p for p in results["curves"]["lost"]}
    assert lost[2]["k"] == 0 and lost[3]["k"] == lost[3]["n"] >= 5, lost
    assert results["window"]["lost"].startswith("loses a turn once the conversation is 2-3 turns long"), results
    correct, _ = _target_window(tmp_path / "correct", vary="turns", values="2,3")
    assert all(p["k"] == 0 and p["n"] >= 5 for p in correct["curves"]["lost"]), correct["curves"]
