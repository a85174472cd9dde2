"""`lab lesson` bad input: exit 2, a message saying what to do, nothing started."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from lab.common.config import ROOT


def lab(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "LAB_LESSON_RUN_DIR": str(tmp / "run"), "HOME": str(tmp)}
    return subprocess.run(
        [sys.executable, "-m", "lab", "lesson", *args], capture_output=True, text=True, timeout=60, cwd=ROOT, env=env
    )


def test_lessons_are_listed_one_per_line_numbered(tmp_path: Path) -> None:
    res = lab(tmp=tmp_path)
    assert res.returncode == 0
    assert [line[:3] for line in res.stdout.splitlines()[:7]] == [f"{n:>2}." for n in range(1, 8)]


def test_an_unknown_lesson_exits_2_listing_the_lessons(tmp_path: Path) -> None:
    res = lab("42", "--check", tmp=tmp_path)
    assert res.returncode == 2 and "unknown lesson '42'" in res.stderr and " 1. " in res.stderr
    assert "Traceback" not in res.stderr and not (tmp_path / "run").exists()


def test_an_exercise_with_a_syntax_error_exits_2_at_its_line(tmp_path: Path) -> None:
    bad = tmp_path / "exercise.py"
    bad.write_text(
        (ROOT / "lab/lessons/exercises/01_create_task.py")
        .read_text()
        .replace("asyncio.create_task(coro)", "await coro +")
    )
    line = next(i for i, t in enumerate(bad.read_text().splitlines(), 1) if "await coro +" in t)
    res = lab("1", "--check", "--exercise", str(bad), tmp=tmp_path)
    assert res.returncode == 2, res.stderr
    assert f"{bad}:{line}: SyntaxError" in res.stderr and "lab lesson 1 --reset" in res.stderr
    assert "Traceback" not in res.stderr
    assert not (tmp_path / "run").exists(), "nothing may start for a broken exercise"


def test_reset_restores_an_exercise(tmp_path: Path) -> None:
    target = tmp_path / "exercise.py"
    target.write_text("edited\n")
    res = lab("2", "--reset", "--exercise", str(target), tmp=tmp_path)
    assert res.returncode == 0 and "restored" in res.stdout
    assert target.read_text() == (ROOT / "lab/lessons/exercises/02_ttl_set_once.py").read_text()
