"""scripts/setup.sh (what `make` runs first): each step skips when satisfied and fails with the
fix when it cannot proceed."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

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
    assert "no Go toolchain" in res.stderr and "--mode compose" in res.stderr
    assert not (tmp_path / "bin" / "toxiproxy-server").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to drop to an unprivileged user")
def test_not_root_prints_the_apt_line() -> None:
    # pytest's tmp_path is private to root: use a folder the unprivileged user can read.
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)
        script = Path(tmp) / "setup.sh"
        shutil.copy(SCRIPT, script)
        script.chmod(0o755)
        res = subprocess.run(
            ["bash", str(script), "system"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp,
            user=65534,
            group=65534,
            extra_groups=[],
            env={"PATH": "/usr/bin:/bin", "LAB_SYSTEM_NEEDS": "lab-absent-cmd:lab-absent-pkg"},
        )
    assert res.returncode == 1
    assert "as root run: apt-get update && apt-get install -y lab-absent-pkg" in res.stderr


def test_satisfied_steps_are_skipped() -> None:
    assert "present" in run("system").stdout
    toxi = run("toxiproxy")
    assert toxi.returncode == 0 and "2.12.0 present" in toxi.stdout
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
    assert res.returncode == 1 and "valid: venv, system, toxiproxy, node, docker, all" in res.stderr
