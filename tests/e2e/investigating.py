"""What the e2e tests of `lab investigate` share: the examples' specs, a run of the CLI on free
ports with its own run folder, and the check that it left nothing running."""

from __future__ import annotations

import json
import os
from pathlib import Path

from lab.common.config import PORT_ENV
from lab.model.attribution import NOT_APPLICABLE
from lab.stack import procs
from tests.cleanup import lab_down_after
from tests.helpers import free_ports, run_lab

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "chat-service.toml"
FOREIGN = ROOT / "examples" / "foreign-app.toml"


def api_spec(tmp_path: Path) -> Path:
    """The foreign spec without [page]: the lab drives the app's API from its own page."""
    text = FOREIGN.read_text()
    path = tmp_path / "foreign-api.toml"
    text = text[: text.index("\n[page]")] + text[text.index("\n[source]") :]  # [source] kept
    path.write_text(text.replace('cwd = ".."', f'cwd = "{FOREIGN.parent.parent}"'))
    return path


def investigate_env(tmp_path: Path) -> tuple[dict[str, str], int]:
    """Free ports for the lab's Redis/Toxiproxy and the target, and a run folder of its own."""
    ports = free_ports(len(PORT_ENV) + 1)
    env = dict(os.environ)
    env.update({name: str(p) for name, p in zip(PORT_ENV.values(), ports)})
    env["LAB_RUN_DIR"] = str(tmp_path / "run")
    return env, ports[-1]


def investigate(tmp_path: Path, *args: str, spec: Path = EXAMPLE) -> tuple[int, str, dict]:  # type: ignore[type-arg]
    """`lab investigate --target spec ARGS` as a user runs it: (exit code, output, results.json)."""
    env, target_port = investigate_env(tmp_path)
    reports = tmp_path / "reports"
    with lab_down_after(env):  # a run that timed out was SIGKILLed: what it started is left
        p = run_lab(
            env,
            "investigate",
            "--target",
            str(spec),
            "--set",
            f"http.port={target_port}",
            "--reports",
            str(reports),
            *args,
            timeout=600,
        )
        out = p.stdout + p.stderr
        assert_nothing_left(tmp_path / "run-investigate", out)
    results_files = sorted(reports.glob("*/results.json"))
    results = json.loads(results_files[-1].read_text()) if results_files else {}
    return p.returncode, out, results


def assert_nothing_left(run_dir: Path, out: str) -> None:
    left = [p for p in procs.recorded(run_dir) if p.alive()] if run_dir.is_dir() else []
    assert not left, f"left running: {left}\n{out}"


def applies_not(cell: dict) -> bool:  # type: ignore[type-arg]
    """A results.json cell the app's own design left nothing to test (lab.model.attribution's
    "not applicable": a model cut of an app that asks for whole answers, a write refused once the
    answer began in an app that stores before it answers)."""
    return cell["status"] == "unexercised" and cell["reason"].startswith(NOT_APPLICABLE)


def assert_refused_and_silent(tmp_path: Path, spec: Path, bug: str) -> None:
    """``write_refused`` (both moments, 2 trials each) on an app with ``bug`` (NAME=VALUE of its
    environment): acked_write_refused in every trial (beside it at most stored_after_answer, the
    same late write seen from the answer); the app without it: nothing drawn."""
    only = ("--only", "write_refused", "--turns", "3", "--trials", "2")
    code, out, results = investigate(tmp_path / "bug", *only, "--set", f"start.env.{bug}", spec=spec)
    assert code == 1, out
    found = {d["code"]: d for d in results["diagnoses"]}
    assert "acked_write_refused" in found and set(found) <= {"acked_write_refused", "stored_after_answer"}, out
    assert found["acked_write_refused"]["k"] == found["acked_write_refused"]["n"] >= 4, found  # both moments
    code, out, results = investigate(tmp_path / "ok", *only, spec=spec)
    assert code == 0 and results["diagnoses"] == [], out


def diagnosed_then_silent(
    tmp_path: Path, spec: Path, only: tuple[str, ...], bugs: str, variable: str = "APP_BUGS"
) -> tuple[dict[str, dict], dict, str]:  # type: ignore[type-arg]
    """`lab investigate ONLY` on the app with ``bugs`` (in its ``variable``), then without them: the bug
    run's diagnoses by code, its results and its output (exit 1: something drawn); the run
    without them must draw nothing (exit 0)."""
    code, out, results = investigate(tmp_path / "bug", *only, "--set", f"start.env.{variable}={bugs}", spec=spec)
    assert code == 1, out
    code, ok_out, ok = investigate(tmp_path / "ok", *only, spec=spec)
    assert code == 0 and ok["diagnoses"] == [], ok_out
    return {d["code"]: d for d in results["diagnoses"]}, results, out
