"""`lab investigate` against an app that keeps each message under a key of its own
(examples/keyed_messages_app.py: note:<uuid> Hashes, the conversation a Sorted Set of their ids
holding no text). No key is named after the session and holds the messages, so the spec has no
[redis] key: what needs the key's record (the TTL rules, a write after the answer) is not judged,
and the experiment switched on by the key's first change is left out of the plan. What the page
and the faults show is still judged, and nothing is claimed that the key would be needed for."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.investigating import ROOT, investigate

SPEC = ROOT / "examples" / "keyed-messages.toml"


def _found(tmp_path: Path, bugs: str, *args: str) -> tuple[int, str, dict[str, dict]]:  # type: ignore[type-arg]
    code, out, results = investigate(tmp_path, *args, "--set", f"start.env.KPM_BUGS={bugs}", spec=SPEC)
    return code, out, {d["code"]: d for d in results["diagnoses"]}


def test_the_correct_app_shows_nothing_over_the_whole_plan(tmp_path: Path) -> None:
    """No diagnosis and no anomaly. (Before its client retried on a closed connection, the app's
    first read after an outage failed -- H under write_refused and under down in fresh-clone
    runs, 2026-12-06/07: true of that app, not of this one.)"""
    code, out, results = investigate(tmp_path, "--trials", "1", "--set", "start.env.KPM_BUGS=", spec=SPEC)
    assert results["diagnoses"] == [], out
    seen = {(c["fault"], m) for c in results["cells"] for m, r in c["rates"].items() if r.get("k")}
    assert not seen and code == 0 and "No anomaly found" in out, out
    assert "write_refused:at=later" not in out, out  # left out: no key to switch it on
    assert "ttl_not_renewed (needs ttl_set in one trial)" in out, out  # not judged, and said so


def test_a_swallowed_store_error_is_acknowledged_while_unreachable_and_refused(tmp_path: Path) -> None:
    code, out, found = _found(tmp_path, "swallow", "--trials", "2", "--only", "down|write_refused")
    assert code == 1, out
    assert {"acked_while_unreachable", "acked_write_refused"} <= set(found), out
    assert all(d["k"] == d["n"] == 2 for c, d in found.items() if c != "acked_lost"), found


def test_an_index_written_by_a_task_nobody_awaits_is_a_stale_read_and_no_more(tmp_path: Path) -> None:
    """lazy_index adds the message's id to the conversation's index one round trip after the
    answer: under 300 ms of latency the page reloaded at the answer misses the turn and the
    settled history has it. Without the key's record the lab cannot date the index's write, so
    no cause is drawn beyond what the page showed (2/2 and 2/2 over the two after_ack rows in a
    run of the whole plan, 2026-12-06)."""
    code, out, found = _found(tmp_path, "lazy_index", "--trials", "2", "--only", "after_ack")
    assert code == 1 and set(found) == {"stale_reads"}, out
    assert found["stale_reads"]["k"] >= 2, found
