"""lab.commands.needs -- `lab doctor` and `lab setup`: each need found where the lab's runs look
for it; a missing one named with the command that installs it (exit 2); apt only as root."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lab.commands import needs
from lab.common.config import ROOT, LabConfig
from lab.common.errors import UsageError


def doctor(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lab", "doctor"],
        env={**os.environ, "LAB_HOME": str(tmp_path / "home"), **env},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_doctor_is_green_where_make_setup_ran(tmp_path: Path) -> None:
    res = doctor(tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "ok       toxiproxy     2.12.0 at" in res.stdout and "ok       redis-server" in res.stdout, res.stdout
    assert not (tmp_path / "home").exists()  # a check writes nothing


def test_a_missing_program_is_named_with_the_command_that_installs_it(tmp_path: Path) -> None:
    """No redis-server on PATH and an empty bin folder: both named, each with its command; exit 2."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "path").mkdir()
    res = doctor(tmp_path, LAB_BIN=str(tmp_path / "bin"), PATH=str(tmp_path / "path"))
    assert res.returncode == 2, res.stdout + res.stderr
    out = res.stdout
    assert "MISSING  toxiproxy" in out and f"install: LAB_BIN={tmp_path / 'bin'} lab setup toxiproxy" in out, out
    assert "MISSING  redis-server" in out and "apt-get install -y redis-server" in out, out
    assert "redis-server, toxiproxy missing" in out, out


def test_a_need_only_compose_targets_have_does_not_fail_the_doctor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(needs, "_on_path", lambda cmd: None if cmd in ("dockerd", "docker") else f"/usr/bin/{cmd}")
    docker = needs.BY_NAME["docker"]
    assert not docker.required and docker.find(LabConfig()) is None
    assert needs.fix(docker, LabConfig()).endswith("apt-get install -y docker.io")


def test_apt_is_run_only_as_root_and_otherwise_printed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setenv("LAB_SYSTEM_NEEDS", "lab-absent-cmd:lab-absent-pkg")
    ran: list[list[str]] = []
    monkeypatch.setattr(needs, "_run", lambda argv, *a: ran.append(argv))
    with pytest.raises(UsageError) as exc:
        needs.setup(needs.names(["system"]), LabConfig(), lambda line: None)
    assert exc.value.exit_code == 2 and not ran
    assert "as root run: apt-get update && apt-get install -y lab-absent-pkg" in str(exc.value)
    assert needs.fix(needs.names(["system"])[0], LabConfig()) == "sudo apt-get install -y lab-absent-pkg"


def test_setup_names_the_valid_needs() -> None:
    with pytest.raises(UsageError) as exc:
        needs.names(["redis"])
    assert "unknown need 'redis'" in str(exc.value) and "valid: all, system, redis-server, toxiproxy" in str(exc.value)
    assert [n.name for n in needs.names([])] == ["system", "toxiproxy"]
    assert [n.name for n in needs.names(["toxiproxy", "all"])] == ["toxiproxy", "system"]


def test_the_lab_in_a_checkout_keeps_its_programs_there_and_its_runs_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LAB_HOME", raising=False)
    monkeypatch.delenv("LAB_RUN_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    cfg = LabConfig()
    assert cfg.bin_dir == ROOT / ".lab" / "bin" and cfg.run_dir == tmp_path.resolve() / ".lab" / "run" / "native"
    assert cfg.topology_file.read_text() == (ROOT / "toxiproxy.json").read_text()  # the package's copy
