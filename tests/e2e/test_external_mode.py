"""`--mode external`: the lab on services that already run (the containers of a Kubernetes pod,
deploy/k8s/). Here the services are the test session's native stack; `lab chaos --mode external`
must find them by the lab's ports, run its trials through them, stop nothing, and refuse the
faults that need to own a process."""

from __future__ import annotations

import json
import os

from lab.stack.native import NativeStack
from tests.helpers import judged, run_lab


def _env(stack: NativeStack, tmp: str) -> dict[str, str]:
    env = dict(os.environ)
    env["LAB_RUN_DIR"] = tmp  # the runner's own folder ...
    env["LAB_BACKEND_LOG"] = str(stack.backend_log)  # ... the backend's output elsewhere
    return env


def test_chaos_runs_on_services_it_did_not_start(lab_stack: NativeStack, tmp_path) -> None:  # type: ignore[no-untyped-def]
    before = lab_stack.status()
    p = run_lab(
        _env(lab_stack, str(tmp_path / "run")),
        "chaos",
        "--mode",
        "external",
        "--only",
        "profile=correct|swallowed_errors;fault=down;refresh=settled",
        "--trials",
        "3",
        "--max-trials",
        "3",
        "--seed",
        "11",
        "--reports",
        str(tmp_path / "reports"),
        timeout=300,
    )
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    results = json.loads(next((tmp_path / "reports").glob("*/results.json")).read_text())
    assert results["mode"] == "external"
    cells = {c["profile"]: c for c in results["cells"]}
    judged(cells["correct"], 3)
    assert cells["correct"]["status"] == "valid" and cells["correct"]["anomalies"] == {}, cells["correct"]
    # Every judged trial lost its turn (a loaded machine may leave one unknown, with its reason).
    assert cells["swallowed_errors"]["anomalies"].get("lost") == judged(cells["swallowed_errors"], 3), cells
    # Nothing was stopped: the same processes still serve.
    after = lab_stack.status()
    assert after["healthy"] and after["services"] == before["services"], (before, after)
    assert "replay --mode external" in json.dumps(results["replay"])


def test_process_faults_are_refused_before_anything_runs(lab_stack: NativeStack, tmp_path) -> None:  # type: ignore[no-untyped-def]
    p = run_lab(
        _env(lab_stack, str(tmp_path / "run")),
        "chaos",
        "--mode",
        "external",
        "--only",
        "fault=redis_pause",
        "--reports",
        str(tmp_path / "reports"),
        timeout=60,
    )
    assert p.returncode == 2, p.stdout + p.stderr
    assert "fault 'redis_pause' needs the native or compose stack; the external stack cannot do it" in p.stderr
    assert not (tmp_path / "reports").exists()
