"""The model's stream cut part-way, on an app that streams the model's answer to its page
(examples/model_fastapi.py: FastAPI, the openai SDK's AsyncOpenAI, one JSON document per
conversation -- unlike model_flask's list rows on gunicorn):

- keep_cut_reply: the cut text stored in a whole reply's record -> cut_reply_stored_whole and
  nothing else, in every trial (the app's code path, not a race);
- correct (the cut reply stored marked "interrupted", the answer a 502), under the cut and under
  a 429: no anomaly, every trial judged."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.investigating import investigate
from tests.helpers import ROOT

MODEL_APP = ROOT / "examples" / "model-fastapi.toml"
CUT = ("--only", "model_cut", "--turns", "3", "--trials", "5")  # the 5-trial run


def test_a_cut_reply_kept_as_if_whole_is_found_and_nothing_else(tmp_path: Path) -> None:
    code, out, results = investigate(
        tmp_path, *CUT, "--set", "start.env.MODEL_FASTAPI_BUGS=keep_cut_reply", spec=MODEL_APP
    )
    assert code == 1, out
    found = {d["code"]: d for d in results["diagnoses"]}
    assert set(found) == {"cut_reply_stored_whole"}, out
    d = found["cut_reply_stored_whole"]
    assert d["k"] == d["n"] and 4 <= d["n"] <= 5, d  # every judged trial
    assert "stopped after 10 tokens and the app wrote those" in d["evidence"], d
    trials = json.loads(sorted((tmp_path / "reports").glob("*/trials.json"))[-1].read_text())
    assert {t["fault_evidence"] for t in trials} == {
        "a streamed call through the model proxy stopped after 11 events, without its final one"
    }


def test_a_correct_app_marks_a_cut_reply_and_keeps_the_message_under_a_429(tmp_path: Path) -> None:
    code, out, results = investigate(
        tmp_path, "--only", "model_cut|model_error", "--turns", "3", "--trials", "2", spec=MODEL_APP
    )
    assert code == 0 and results["diagnoses"] == [] and "No anomaly found" in out, out
    trials = json.loads(sorted((tmp_path / "reports").glob("*/trials.json"))[-1].read_text())
    assert len(trials) == 6 and not [t["unknown"] for t in trials if t["unknown"]], out
    # The correct app stored the cut start marked, in another shape than its whole replies.
    cut = [sh for t in trials if t["fault"] == "model_cut" for r in t["store"] for _, sh in r.get("shapes", [])]
    assert any('"interrupted": true' in sh for sh in cut), cut


def test_a_reply_whose_refused_store_is_only_logged_is_read_from_the_models_words(tmp_path: Path) -> None:
    """A plain text stream names no end event, so an error the app writes into the text reads
    like a reply. Where the stream is the stand-in model's reply to the letter, the app added
    nothing: log_store_error (the reply's refused store logged, the stream ended as whole) ->
    acked_write_refused in every at=answer trial and nothing else; the correct app in another
    style, which ends the stream with "[not saved: ...]", -> nothing drawn, those sends not
    taken as acknowledged."""
    only = ("--only", "write_refused", "--turns", "3", "--trials", "3")
    bug = ("--set", "start.env.MODEL_FASTAPI_BUGS=log_store_error")
    code, out, results = investigate(tmp_path / "bug", *only, *bug, spec=MODEL_APP)
    assert code == 1, out
    found = {d["code"]: d for d in results["diagnoses"]}
    assert set(found) == {"acked_write_refused"} and found["acked_write_refused"]["k"] >= 3, out
    assert "the reply absent from the final history" in found["acked_write_refused"]["evidence"], found
    code, out, results = investigate(
        tmp_path / "text", *only, "--set", "start.env.MODEL_FASTAPI_STORE_ERRORS=text", spec=MODEL_APP
    )
    assert code == 0 and results["diagnoses"] == [], out
    trials = json.loads(sorted((tmp_path / "text" / "reports").glob("*/trials.json"))[-1].read_text())
    at_answer = [t for t in trials if t["fault_params"].get("at") == "answer" and not t["unknown"]]
    unread = [s for t in at_answer for s in t["sends"] if s["reason"].startswith("a faulted send: a streamed answer")]
    assert at_answer and len(unread) == len(at_answer), at_answer  # "[not saved: ...]": not taken as a reply
    assert all(s["outcome"] == "info" for s in unread), unread
