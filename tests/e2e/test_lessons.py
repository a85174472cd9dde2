"""Each lesson on the real stack: the unfixed exercise fails `lab lesson N --check` and the
reference solution passes it (20 trials per cell, the lesson's fault, Chromium). Each check
starts and stops a stack of its own on free ports; the committed exercises are never touched
(copies in tmp_path)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from lab import lessons
from lab.common.config import PORT_ENV
from lab.stack import ports
from tests.cleanup import lab_down_after
from tests.helpers import isolated_env, run_lab, start_lab


def _env(run_dir: Path) -> dict[str, str]:
    """Free ports (below the ephemeral range: lesson 7 restarts Redis on its port), own folder."""
    return isolated_env(run_dir, LAB_LESSON_RUN_DIR=str(run_dir))


def _leftovers(run_dir: Path, env: dict[str, str]) -> list[str]:
    """Processes whose command line names the run folder (redis --dir, toxiproxy -config) and
    stack ports still taken."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(run_dir) in args:
            found.append(f"{cmdline.parent.name}: {args[:120]}")
    found += [f"port {env[v]} taken" for v in PORT_ENV.values() if not ports.is_free("127.0.0.1", int(env[v]))]
    return found


@pytest.mark.parametrize("version", ["exercise", "solution"])
@pytest.mark.parametrize("number", sorted(lessons.REGISTRY), ids=lambda n: lessons.REGISTRY[n].name)
def test_exercise_fails_and_solution_passes_the_check(number: int, version: str, tmp_path: Path) -> None:
    le = lessons.REGISTRY[number]
    mine = tmp_path / "exercise.py"
    shutil.copyfile(le.pristine if version == "exercise" else le.solution, mine)
    run_dir = tmp_path / "run"
    env = _env(run_dir)
    with lab_down_after(env):  # a check that timed out was SIGKILLed: its stack is left
        res = run_lab(
            env,
            "lesson",
            str(number),
            "--check",
            "--exercise",
            str(mine),
            "--seed",
            "2026",
            "--reports",
            str(tmp_path / "reports"),
            timeout=280,
        )
        out = res.stdout + res.stderr
        assert _leftovers(run_dir, env) == [], "the check left services running"
        if version == "exercise":
            assert res.returncode == 1, out
            assert "FAIL: the defect is still there" in out and "replay: .venv/bin/lab lesson" in out
            if le.kind == "behaviour":  # the exercise's suspect line, proven by the failing trials
                assert "proven: the failing trials show the mechanism of these lines" in out, out
                assert f"{mine}:" in out, out
        else:
            assert res.returncode == 0, out
            assert "PASS: none of" in out and "0/20 [0.00, 0.16]" in out
            if le.kind == "behaviour":  # the fix leaves no suspect line
                assert "cleared: no suspect line left in the exercise, and 0/20 trials" in out, out


def test_a_runtime_error_in_the_exercise_fails_the_check_at_its_line(tmp_path: Path) -> None:
    le = lessons.REGISTRY[1]
    mine = tmp_path / "exercise.py"
    mine.write_text(le.pristine.read_text().replace("asyncio.create_task(coro)", "await kroutine"))
    line = next(i for i, t in enumerate(mine.read_text().splitlines(), 1) if "await kroutine" in t)
    run_dir = tmp_path / "run"
    env = _env(run_dir)
    with lab_down_after(env):  # a check that timed out was SIGKILLed: its stack is left
        res = run_lab(
            env,
            "lesson",
            "1",
            "--check",
            "--exercise",
            str(mine),
            "--trials",
            "2",
            "--reports",
            str(tmp_path / "reports"),
            timeout=200,
        )
        out = res.stdout + res.stderr
        assert res.returncode == 1, out
        assert f"the backend raised in your exercise: {mine}:{line}: NameError" in out
        assert _leftovers(run_dir, env) == []


def test_sigterm_during_a_check_stops_everything(tmp_path: Path) -> None:
    import signal
    import subprocess

    from lab.common.wait import wait_until

    run_dir = tmp_path / "run"
    env = _env(run_dir)
    with lab_down_after(env):  # also when the signal step fails and `lab` is SIGKILLed below
        proc = start_lab(
            "lesson",
            "1",
            "--check",
            "--exercise",
            str(lessons.REGISTRY[1].pristine),
            "--reports",
            str(tmp_path / "reports"),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        try:
            # The stack is up once its state file exists: the trials start right after.
            wait_until(lambda: (run_dir / "stack.json").exists(), what="the lesson stack up", timeout_s=120)
            proc.send_signal(signal.SIGTERM)
            out, _ = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 143, out  # 128 + SIGTERM (lab.common.signals)
        assert "interrupted by SIGTERM" in out and _leftovers(run_dir, env) == []
