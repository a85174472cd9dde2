"""The model's side, on an app that calls a model (examples/model_flask.py: Flask on gunicorn's
sync workers, the openai SDK, LangChain's Redis history layout): the lab serves the stand-in
behind its own Toxiproxy link, records every call, and judges what each was told.

- worker_memory on two workers: the model is told less than the user was acknowledged while
  Redis held it -> model_told_less and nothing else (the page and the key are fine);
- a window of the newest 2 turns, no bug: reported as a context window, no defect drawn;
- correct, and the same bug on one worker: no anomaly (the copy is right with one worker)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_investigate import _investigate
from tests.helpers import ROOT

MODEL_APP = ROOT / "examples" / "model-flask.toml"
RUN = ("--only", "none", "--turns", "4", "--trials", "4")
SHORT = ("--only", "none", "--turns", "4", "--trials", "2")  # what no trial may show needs fewer


def test_a_per_worker_memory_tells_the_model_less_and_nothing_else(tmp_path: Path) -> None:
    code, out, results = _investigate(tmp_path, *RUN, "--set", "start.env.MODEL_APP_BUGS=worker_memory", spec=MODEL_APP)
    assert code == 1, out
    found = {d["code"]: d for d in results["diagnoses"]}
    assert set(found) == {"model_told_less"}, out
    d = found["model_told_less"]
    assert 2 <= d["k"] <= d["n"] == 12, d  # a race (the kernel picks the worker): its rate, never one trial
    assert "had been acknowledged and in Redis before that send left" in d["evidence"], d
    assert results["model"]["calls"] >= 12 * 4 and results["model"]["context_window"] is None, results["model"]
    # The stand-in really served the app: its calls went through the model proxy, and its
    # replies are the page's (the reply of a call told less says so).
    trials = json.loads(sorted((tmp_path / "reports").glob("*/trials.json"))[-1].read_text())
    assert all(t["model_calls"] for t in trials if not t["unknown"]), "a judged trial without its model calls"
    assert "model (openai_chat) at http://127.0.0.1:" in out and "through Toxiproxy" in out, out


def test_a_context_window_is_reported_as_a_design_and_no_defect(tmp_path: Path) -> None:
    code, out, results = _investigate(tmp_path, *SHORT, "--set", "start.env.MODEL_APP_WINDOW_TURNS=2", spec=MODEL_APP)
    assert code == 0 and results["diagnoses"] == [], out
    assert results["model"]["context_window"] == 2, results["model"]
    assert "a context window: every call carried the newest 2 turns" in out, out


def test_one_worker_or_no_bug_tells_the_model_everything(tmp_path: Path) -> None:
    for name, args in (
        ("correct", ()),
        ("one-worker", ("--set", "start.env.MODEL_APP_BUGS=worker_memory", "--set", "start.env.WEB_CONCURRENCY=1")),
    ):
        code, out, results = _investigate(tmp_path / name, *SHORT, *args, spec=MODEL_APP)
        assert code == 0 and results["diagnoses"] == [] and "No anomaly found" in out, (name, out)
        assert results["model"]["calls"] >= 6 * 4, (name, results["model"])
