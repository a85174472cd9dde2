"""scripts/setup.sh (what `make` runs first): each step skips when satisfied and fails with the
fix when it cannot proceed. Its system and toxiproxy steps are `lab setup`'s (lab.commands.needs)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from lab.common.config import ROOT

SCRIPT = ROOT / "scripts" / "setup.sh"


def run(*args: str, env: dict[str, str] | None = None, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        **kw,
    )  # type: ignore[call-overload]


def test_without_go_it_says_so_and_points_to_compose(tmp_path: Path) -> None:
    res = run("toxiproxy", env={"GO": str(tmp_path / "no-go"), "LAB_BIN": str(tmp_path / "bin")})
    assert res.returncode == 1
    assert "no Go toolchain" in res.stderr and "--mode compose" in res.stderr, res.stderr
    assert not (tmp_path / "bin" / "toxiproxy-server").exists()


def test_satisfied_steps_are_skipped() -> None:
    assert "present" in run("system").stdout
    toxi = run("toxiproxy")
    assert toxi.returncode == 0 and "toxiproxy: present (2.12.0 at" in toxi.stdout
    assert run("venv").returncode == 0  # brings it up to date if pyproject changed
    venv = run("venv")
    assert venv.returncode == 0 and "up to date" in venv.stdout


def test_toxiproxy_binary_reports_the_stamped_version() -> None:
    out = subprocess.run(
        [str(ROOT / ".lab/bin/toxiproxy-server"), "-version"], capture_output=True, text=True, timeout=30
    ).stdout
    assert "2.12.0" in out


def test_unknown_step_names_the_valid_ones() -> None:
    res = run("bogus")
    assert res.returncode == 1 and "valid: venv, system, toxiproxy, node, go, docker, all" in res.stderr
