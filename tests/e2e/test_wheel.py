"""From `pip install` to a diagnosis, in a user's own repository: the wheel built from this
checkout, installed into a fresh virtualenv outside it that holds only the lab's runtime
dependencies; then, in a folder with a copy of an example app and a user's own test of its page
(no conftest), as its user would: `lab doctor`, `lab init` drafts the spec, `lab investigate`
diagnoses the app's bug, and `pytest --lab-target` on the user's test gives the same diagnosis.
Afterwards nothing new in the checkout or in the virtualenv's site-packages: run folders and
reports are in the user's folder.

The runtime dependencies come from this checkout's .venv (no network): a folder of links to
exactly the distributions the wheel requires, and theirs, on the new venv's path."""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

from packaging.requirements import Requirement

from lab.common.config import PORT_ENV, ROOT
from tests.helpers import free_ports

APP = ROOT / "examples" / "foreign_app.py"
USER_TEST = ROOT / "examples" / "pytest_user" / "test_chat_reload.py"


def _build_wheel(tmp: Path) -> Path:
    """From a copy of the checkout's files (a build writes build/ and *.egg-info beside its source)."""
    src = tmp / "src"
    files = subprocess.run(
        [
            "git",
            "ls-files",
            "-co",
            "--exclude-standard",
            "pyproject.toml",
            "README.md",
            "lab",
            "services",
            "toxiproxy.json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for f in files:
        if (ROOT / f).exists() or (ROOT / f).is_symlink():
            (src / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, src / f, follow_symlinks=False)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp / "dist"), str(src)], check=True)
    return next((tmp / "dist").glob("chaoslab-*.whl"))


def _closure(requirements: list[str]) -> set[str]:
    """The distributions these requirements need, with their own, as installed here."""
    seen: set[str] = set()
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        name = req.name.lower().replace("_", "-")
        if name in seen:
            continue
        seen.add(name)
        for sub in importlib.metadata.distribution(req.name).requires or []:
            s = Requirement(sub)
            if s.marker is None or any(s.marker.evaluate({"extra": e}) for e in (req.extras or {""})):
                todo.append(s)
    return seen


def _dependencies_only(venv: Path) -> Path:
    """A folder with links to the runtime dependencies' files in this .venv, on the new venv's path."""
    deps = venv / "deps"
    deps.mkdir()
    wanted = _closure(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"])
    for name in wanted:
        dist = importlib.metadata.distribution(name)
        base = Path(str(dist.locate_file("")))
        for top in {Path(str(f)).parts[0] for f in dist.files or []}:
            if top not in ("..", "__pycache__") and (base / top).exists() and not (deps / top).exists():
                (deps / top).symlink_to(base / top)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "lab-test-deps.pth").write_text(str(deps) + "\n")
    return site


def _snapshot(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def _run(venv: Path, work: Path, env: dict[str, str], *argv: str, timeout: float = 600) -> tuple[int, str]:
    p = subprocess.run(
        [str(venv / "bin" / argv[0]), *argv[1:]], cwd=work, env=env, capture_output=True, text=True, timeout=timeout
    )
    return p.returncode, p.stdout + p.stderr


def test_from_pip_install_to_a_diagnosis_in_a_users_own_folder(tmp_path: Path) -> None:
    checkout_before = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout
    wheel = _build_wheel(tmp_path)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = _dependencies_only(venv)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", "--python", str(venv / "bin" / "python")]
    subprocess.run([*pip, "install", "--no-deps", "--no-index", str(wheel)], check=True)
    check = subprocess.run([*pip, "check"], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr  # the wheel's requirements, all met
    installed = _snapshot(site)

    work = tmp_path / "my-chat-app"
    (work / "tests").mkdir(parents=True)
    shutil.copy(APP, work / "app.py")
    shutil.copy(USER_TEST, work / "tests" / "test_chat.py")
    ports = free_ports(len(PORT_ENV) + 1)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LAB_", "PYTEST_", "VIRTUAL_ENV", "PYTHONPATH"))}
    env.update({name: str(p) for name, p in zip(PORT_ENV.values(), ports)})
    env["PATH"] = f"{venv / 'bin'}:{env['PATH']}"
    env["LAB_BIN"] = str(ROOT / ".lab" / "bin")  # the Toxiproxy `make setup` built (lab setup would build its own)
    try:
        code, out = _run(venv, work, env, "python", "-c", "import lab; print(lab.__file__)")
        assert out.startswith(str(site)), out  # the wheel's lab, not the checkout's
        code, out = _run(venv, work, env, "lab", "doctor")
        assert code == 0, out

        code, out = _run(venv, work, env, "lab", "init", "--start", "{python} app.py", "--port", str(ports[-1]))
        spec = work / "lab.toml"
        assert code == 0 and "passes the contract check" in out, out
        assert 'command = "{python} app.py"' in spec.read_text(), spec.read_text()

        bug = "start.env.FOREIGN_BUGS=ack_early"
        code, out = _run(
            venv,
            work,
            env,
            "lab",
            "investigate",
            "--target",
            spec.name,
            "--only",
            "after_ack",  # the 300 ms rows that show it (the other latency rows: test_investigate_foreign)
            "--trials",
            "2",
            "--set",
            bug,
        )
        assert code == 1 and "[acked_too_fast]" in out, out
        assert list(work.glob("reports/*/report.html")), out

        # A user's own test, unchanged, with no conftest: moved here from tests/e2e/test_pytest_target.py.
        code, out = _run(
            venv, work, env, "python", "-m", "pytest", "tests", "--lab-target", spec.name, "--lab-set", bug,
            "--lab-trials", "5", "-k", "slow_redis", "-q", "-p", "no:cacheprovider", "--junitxml", "junit.xml",
        )  # fmt: skip
        assert code == 0, out  # the test's own asserts are the user's check: they passed
        assert "under latency:latency_ms=300: 5 judged trials of 5" in out, out
        assert "[acked_too_fast]" in out and "-- 5/5 [0.57, 1.00]" in out, out
        assert "acknowledged turns lost: 0/5 [0.00, 0.43]" in out, out
        replay = next(line for line in out.splitlines() if line.strip().startswith("replay: pytest"))
        assert f"--lab-set {bug}" in replay and "--lab-seed" in replay, replay
        record = next(line for line in out.splitlines() if "its record:" in line).split("its record:")[1].strip()
        assert Path(record).is_file() and record.startswith(str(work / "test-results")), record
        props = [
            p.get("value") for p in ET.parse(work / "junit.xml").iter("property") if p.get("name") == "lab_verdict"
        ]
        assert len(props) == 5 and set(props) <= {"valid", "invalid"}, props
    finally:
        down = _run(venv, work, env, "lab", "down")
    assert down[0] == 0, down[1]
    assert (work / ".lab" / "run").is_dir()  # the run folders: in the user's folder
    assert _snapshot(site) == installed  # nothing written into the installed package
    after = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout
    assert after == checkout_before and not re.search(r"^\?\? (build|.*egg-info)", after, re.M), after
