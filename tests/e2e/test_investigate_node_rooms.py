"""An app written apart from the lab (examples/node/rooms.js: Express + ioredis, one JSON document
a room, GET then SET back): its read-modify-write without WATCH loses one of two tabs' turns
(lost_update, and nothing else: the next call's history lacks that turn because Redis lost it,
not because a copy lagged -- model_told_less was drawn beside it before, 2026-12-06); its plain
SET clearing the TTL the room was created with (no_ttl: the record shows the app setting one);
the correct app, under the same experiments: nothing."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.investigating import investigate
from tests.helpers import ROOT

ROOMS = ROOT / "examples" / "node-rooms.toml"
ONLY = ("--only", "two_tabs|browser_restart", "--turns", "3", "--trials", "3")


def test_a_read_modify_write_without_watch_is_a_lost_update_and_nothing_else(tmp_path: Path) -> None:
    code, out, results = investigate(tmp_path, *ONLY, "--set", "start.env.APP_BUGS=no_watch", spec=ROOMS)
    assert code == 1, out
    assert [d["code"] for d in results["diagnoses"]] == ["lost_update"], out


def test_a_plain_set_that_clears_the_ttl_is_no_ttl(tmp_path: Path) -> None:
    code, out, results = investigate(tmp_path, *ONLY, "--set", "start.env.APP_BUGS=set_drops_ttl", spec=ROOMS)
    assert code == 1, out
    found = {d["code"]: d for d in results["diagnoses"]}
    assert set(found) == {"no_ttl"} and found["no_ttl"]["k"] == found["no_ttl"]["n"] >= 5, out
    assert "the app set a TTL on the key" in found["no_ttl"]["evidence"], found


def test_the_correct_app_is_silent(tmp_path: Path) -> None:
    code, out, results = investigate(tmp_path, *ONLY, spec=ROOMS)
    assert code == 0 and results["diagnoses"] == [], out
