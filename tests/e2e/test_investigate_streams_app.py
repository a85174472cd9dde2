"""An app written apart from the lab (examples/streams_app.py: Flask on gunicorn's threads, the
anthropic SDK, a Redis Stream a conversation) telling a failed store in words: with Redis
refusing one send's writes it answers 200 with an apology where the model's reply goes. That
answer carries none of the stand-in model's reply to the send, so it is no acknowledgement:
nothing drawn (acked_write_refused 4/4 before, 2026-12-06). The same app storing in a thread
whose error is only printed: acked_write_refused in every trial (beside it, at times,
stored_after_answer: the same thread storing a turn after its answer, 1/3 in a CI run)."""

from __future__ import annotations

import json
from pathlib import Path

from lab.model.attribution import ANSWER_NOT_THE_MODELS
from tests.e2e.investigating import investigate
from tests.helpers import ROOT

STREAMS_APP = ROOT / "examples" / "flask-streams.toml"
ONLY = ("--only", "write_refused", "--turns", "3", "--trials", "3")


def test_an_apology_in_the_reply_s_place_is_not_an_acknowledgement(tmp_path: Path) -> None:
    code, out, results = investigate(tmp_path, *ONLY, "--set", "start.env.STORE_ERROR_STYLE=apology", spec=STREAMS_APP)
    assert code == 0 and results["diagnoses"] == [], out
    trials = json.loads(sorted((tmp_path / "reports").glob("*/trials.json"))[-1].read_text())
    faulted = [s for t in trials if not t["unknown"] for s in t["sends"] if s["under_fault"]]
    assert len(faulted) >= 3, trials
    assert all(s["outcome"] == "info" and s["reason"] == ANSWER_NOT_THE_MODELS for s in faulted), faulted


def test_a_store_left_to_a_thread_is_acknowledged_though_refused(tmp_path: Path) -> None:
    code, out, results = investigate(tmp_path, *ONLY, "--set", "start.env.APP_BUGS=thread_save", spec=STREAMS_APP)
    assert code == 1, out
    found = {d["code"]: d for d in results["diagnoses"]}
    # The thread's store may also land after the answer of a turn before: stored_after_answer, the same bug.
    assert "acked_write_refused" in found and set(found) <= {"acked_write_refused", "stored_after_answer"}, out
    assert found["acked_write_refused"]["k"] == found["acked_write_refused"]["n"] >= 3, found
