"""The model's side, on an app that calls a model (examples/model_flask.py: Flask on gunicorn's
sync workers, the openai SDK, LangChain's Redis history layout): the lab serves the stand-in
behind its own Toxiproxy link, records every call, and judges what each was told.

- worker_memory on two workers: the model is told less than the user was acknowledged while
  Redis held it -> model_told_less and nothing else (the page and the key are fine);
- a window of the newest 2 turns, no bug: reported as a context window, no defect drawn;
- store_after_model under a 429 (or a 500 once) for one send: the user's message never written ->
  lost_after_model_error and nothing else;
- retry_appends (the app retries the whole exchange): the message stored again per attempt ->
  stored_twice_after_retry and nothing else;
- correct (under the 429 too), and worker_memory on one worker: no anomaly."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.investigating import investigate
from tests.helpers import ROOT

MODEL_APP = ROOT / "examples" / "model-flask.toml"
RUN = ("--only", "none", "--turns", "4", "--trials", "5")  # the 16-turn conversation lags near-surely
# One fault-free experiment (a refresh point with no fault and no long conversation) is enough
# where every call tells the same story (a window) or none may show anything (silence).
SHORT = ("--only", "browser_restart", "--turns", "4", "--trials", "3")
# The run: 5 trials of each experiment; a loaded machine may leave one unknown (never
# a pass or another diagnosis), so the counts below are of the judged trials.
MODEL_ERROR = ("--only", "model_error", "--turns", "3", "--trials", "5")


def test_a_per_worker_memory_tells_the_model_less_and_nothing_else(tmp_path: Path) -> None:
    code, out, results = investigate(tmp_path, *RUN, "--set", "start.env.MODEL_APP_BUGS=worker_memory", spec=MODEL_APP)
    assert code == 1, out
    found = {d["code"]: d for d in results["diagnoses"]}
    assert set(found) == {"model_told_less"}, out
    d = found["model_told_less"]
    assert 2 <= d["k"] <= d["n"] and 12 <= d["n"] <= 15, (
        d
    )  # a race (the kernel picks the worker): its rate, never one trial
    assert "had been acknowledged and in Redis before that send left" in d["evidence"], d
    assert results["model"]["calls"] >= d["n"] * 4 and results["model"]["context_window"] is None, results["model"]
    # The stand-in really served the app: its calls went through the model proxy, and its
    # replies are the page's (the reply of a call told less says so).
    trials = json.loads(sorted((tmp_path / "reports").glob("*/trials.json"))[-1].read_text())
    assert all(t["model_calls"] for t in trials if not t["unknown"]), "a judged trial without its model calls"
    assert "model (openai_chat) at http://127.0.0.1:" in out and "through Toxiproxy" in out, out


def test_a_context_window_is_reported_as_a_design_and_no_defect(tmp_path: Path) -> None:
    code, out, results = investigate(tmp_path, *SHORT, "--set", "start.env.MODEL_APP_WINDOW_TURNS=2", spec=MODEL_APP)
    assert code == 0 and results["diagnoses"] == [], out
    assert results["model"]["context_window"] == 2, results["model"]
    assert "a context window: every call carried the newest 2 turns" in out, out


def test_a_message_stored_only_after_the_model_answered_is_lost_to_a_model_error(tmp_path: Path) -> None:
    code, out, results = investigate(
        tmp_path, *MODEL_ERROR, "--set", "start.env.MODEL_APP_BUGS=store_after_model", spec=MODEL_APP
    )
    assert code == 1, out
    found = {d["code"]: d for d in results["diagnoses"]}
    assert set(found) == {"lost_after_model_error"}, out
    d = found["lost_after_model_error"]
    assert d["k"] == d["n"] and 8 <= d["n"] <= 10, d  # the app's code path, not a race: every trial (a 429, a 500)
    assert "answered with the injected error, the app answered 502" in d["evidence"], d
    trials = json.loads(sorted((tmp_path / "reports").glob("*/trials.json"))[-1].read_text())
    assert {t["fault_evidence"] for t in trials} == {
        "a call through the model proxy was answered HTTP 429 (rate_limit)",
        "a call through the model proxy was answered HTTP 500 (server_error)",
    }


def test_a_message_stored_only_after_the_model_answered_is_lost_to_a_stalled_model(tmp_path: Path) -> None:
    """model_stall (opt-in): no first token for 12 s, then the stand-in hangs up; the app's client
    (timeout 30 s, no retries) fails the send with a 502 and its message was never stored."""
    code, out, results = investigate(
        tmp_path, "--only", "model_stall", "--turns", "3", "--trials", "2",
        "--set", "start.env.MODEL_APP_BUGS=store_after_model", spec=MODEL_APP,
    )  # fmt: skip
    assert code == 1, out
    found = {d["code"]: d for d in results["diagnoses"]}
    assert set(found) == {"lost_after_model_error"}, out
    d = found["lost_after_model_error"]
    assert d["k"] == d["n"] and 1 <= d["n"] <= 2, d
    assert "was held with no answer, the app answered 502" in d["evidence"], d
    trials = json.loads(sorted((tmp_path / "reports").glob("*/trials.json"))[-1].read_text())
    assert {t["fault_evidence"] for t in trials} == {
        "a call through the model proxy got no answer in 0.5 s (held 12000 ms)"
    }, trials


def test_an_exchange_retried_whole_stores_the_message_twice_and_nothing_else(tmp_path: Path) -> None:
    code, out, results = investigate(
        tmp_path, *MODEL_ERROR, "--set", "start.env.MODEL_APP_BUGS=retry_appends", spec=MODEL_APP
    )
    assert code == 1, out
    found = {d["code"]: d for d in results["diagnoses"]}
    assert set(found) == {"stored_twice_after_retry"}, out  # not duplicates: the retry explains it
    d = found["stored_twice_after_retry"]
    assert d["k"] == d["n"] and 8 <= d["n"] <= 10, d  # the 500 once (the retry answered) and the 429 every time
    assert "failed the first call for turn 2 and the app called again" in d["evidence"], d


def test_one_worker_or_no_bug_tells_the_model_everything(tmp_path: Path) -> None:
    one_worker = ("--set", "start.env.MODEL_APP_BUGS=worker_memory", "--set", "start.env.WEB_CONCURRENCY=1")
    correct = ("--only", "browser_restart|model_error|model_stall")
    for name, args in (("correct", correct), ("one-worker", one_worker)):
        # correct: under the 429 and the stall too (answered 502, the message kept)
        code, out, results = investigate(tmp_path / name, *SHORT, *args, spec=MODEL_APP)
        assert code == 0 and results["diagnoses"] == [] and "No anomaly found" in out, (name, out)
        assert results["model"]["calls"] >= 3 * 4 - 1, (name, results["model"])  # -1: a 429 is a call too
        assert "none was told less than the user had been acknowledged: 0/" in out, (name, out)


def test_the_built_in_service_takes_its_replies_from_the_stand_in(tmp_path: Path) -> None:
    """The built-in chat service with CHAT_MODEL_URL (examples/chat-service-model.toml): its
    replies come from the stand-in, which sees every turn it stored; a 429 answers 502 with the
    user's message kept (P, by design); the correct profile: nothing diagnosed, nothing told less."""
    code, out, results = investigate(
        tmp_path, "--only", "none|model_error", "--turns", "3", "--trials", "2",
        spec=ROOT / "examples" / "chat-service-model.toml",
    )  # fmt: skip
    assert code == 0 and results["diagnoses"] == [], out
    assert results["model"]["calls"] >= 2 * 3, results["model"]
    assert "none was told less than the user had been acknowledged" in out, out
    cost = results["model"]["standin"]
    assert cost["calls"] >= 6 and 0 < cost["share"] < 1, cost  # measured, never asserted against a speed
    log = next(iter(sorted((tmp_path / "reports").glob("*/target.log")))).read_text()
    assert "chat.model_failed" in log, log[-2000:]  # the 429 reached the service as a failed call
