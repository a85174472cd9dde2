"""A reply saved as it streams (examples/tornado_progressive.py: Tornado, an NDJSON answer, the
reply's List element replaced every four tokens, so a refresh mid-reply shows a prefix of it).

The correct app -- which writes the reply to its end after the browser left -- is silent with every
trial judged, its reads of half-written replies no stale read; keeping a cut reply marked
"interrupted" is silent too. Its bugs are drawn each for what it is: a turn LREMed when the browser
leaves is cut_turn_removed -- not saved_at_stream_end, which it drew before the store's record told
the two apart (its question had reached Redis before the cut) -- and the reply's last write left to a
task is stored_after_answer."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.investigating import investigate
from tests.helpers import ROOT

SPEC = ROOT / "examples" / "tornado-progressive.toml"


def _trials(folder: Path) -> list[dict]:
    return json.loads(next((folder / "reports").glob("*/trials.json")).read_text())


def test_a_reply_saved_as_it_streams_is_judged_and_its_cut_turns_kept(tmp_path: Path) -> None:
    only = ("--only", "mid_stream|in_flight", "--trials", "2")
    code, out, ok = investigate(tmp_path / "ok", *only, spec=SPEC)
    assert code == 0 and ok["diagnoses"] == [], out
    trials = _trials(tmp_path / "ok")
    assert len(trials) == 4 and not [t["unknown"] for t in trials if t["unknown"]], out
    for t in (t for t in trials if t["refresh"] == "mid_stream"):
        cut = t["sends"][-1]
        assert cut["cut"], t["sends"]
        # The cut turn whole in the end: the app wrote its reply after the browser left.
        assert [r["text"] for r in t["final_rows"]][-2] == cut["text"] and t["final_rows"][-1]["text"], t

    code, out, marked = investigate(
        tmp_path / "mark",
        "--only",
        "mid_stream",
        "--trials",
        "2",
        "--set",
        "start.env.PROGRESSIVE_ON_CUT=mark",
        spec=SPEC,
    )
    assert code == 0 and marked["diagnoses"] == [], out


def test_a_turn_undone_when_the_browser_leaves_is_removed_not_saved_at_the_end(tmp_path: Path) -> None:
    code, out, res = investigate(
        tmp_path / "rb",
        "--only",
        "mid_stream",
        "--trials",
        "2",
        "--set",
        "start.env.PROGRESSIVE_BUGS=rollback_on_cut",
        spec=SPEC,
    )
    assert code == 1, out
    found = {d["code"]: d for d in res["diagnoses"]}
    assert set(found) == {"cut_turn_removed"}, out
    assert found["cut_turn_removed"]["k"] == found["cut_turn_removed"]["n"] == 2, out
    assert "LREM" in found["cut_turn_removed"]["evidence"], out

    code, out, res = investigate(
        tmp_path / "late",
        "--only",
        "latency:stream=upstream",
        "--trials",
        "2",
        "--set",
        "start.env.PROGRESSIVE_BUGS=final_unawaited",
        spec=SPEC,
    )
    assert code == 1 and [d["code"] for d in res["diagnoses"]] == ["stored_after_answer"], out
