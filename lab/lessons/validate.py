"""Is an exercise file loadable? Checked in a child process before anything starts, so a
syntax error, a failing import or a hanging top level never touches the lab or leaves a stack.

``python -m lab.lessons.validate KIND PATH`` prints one JSON line:
``{"ok": true, ...}`` or ``{"ok": false, "line": N, "error": "SyntaxError: ..."}``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any

from lab.common.config import ROOT
from lab.common.errors import UsageError

TIMEOUT_S = 30.0


def _probe(kind: str, path: Path) -> dict[str, Any]:
    try:
        source = path.read_text()
    except OSError as exc:
        return {"ok": False, "line": 0, "error": f"cannot read it: {exc.strerror or exc}"}
    try:
        compile(source, str(path), "exec")
    except SyntaxError as exc:
        return {"ok": False, "line": exc.lineno or 0, "error": f"{type(exc).__name__}: {exc.msg}"}
    try:
        if kind == "config":
            namespace: dict[str, Any] = {"__name__": "exercise", "__file__": str(path)}
            exec(compile(source, str(path), "exec"), namespace)
            durable = namespace.get("DURABLE")
            if not isinstance(durable, bool):
                return {
                    "ok": False,
                    "line": _line_of(source, "DURABLE"),
                    "error": f"DURABLE must be True or False, got {durable!r}",
                }
            return {"ok": True, "durable": durable}
        from services.chat import exercise
        from services.chat.defects import CORRECT, Behaviour

        module = exercise.load(path)
        b = module.apply(CORRECT)
        if not isinstance(b, Behaviour):
            return {
                "ok": False,
                "line": _line_of(source, "def apply"),
                "error": f"apply() must return a Behaviour, got {type(b).__name__}",
            }
        return {"ok": True}
    except Exception as exc:  # the trainee's code: any error is reported, with its line
        return {"ok": False, "line": _frame_line(exc, path), "error": f"{type(exc).__name__}: {exc}"}


def _frame_line(exc: BaseException, path: Path) -> int:
    """The deepest line of the traceback that is in the exercise file."""
    line = 0
    for frame in traceback.extract_tb(exc.__traceback__):
        if Path(frame.filename).resolve() == path.resolve():
            line = frame.lineno or 0
    return line


def _line_of(source: str, text: str) -> int:
    return next((i for i, line in enumerate(source.splitlines(), 1) if text in line), 0)


def validate(kind: str, path: Path, lesson: int | str = "N") -> dict[str, Any]:
    """Run the probe in a child process; UsageError "file:line: error" when it fails."""
    if not path.is_file():
        raise UsageError(
            f"no exercise file at {path}", f"restore it with `lab lesson {lesson} --reset`, or pass --exercise PATH"
        )
    try:
        res = subprocess.run(
            [sys.executable, "-m", "lab.lessons.validate", kind, str(path)],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            cwd=ROOT,
        )
    except subprocess.TimeoutExpired:
        raise UsageError(
            f"{path}: importing it did not finish within {TIMEOUT_S:.0f} s",
            "does its top level wait for something? Only define functions there",
        ) from None
    try:
        out: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        raise UsageError(
            f"{path}: could not be checked (exit {res.returncode}): {(res.stderr or res.stdout).strip()[-500:]}"
        ) from None
    if not out["ok"]:
        raise UsageError(
            f"{path}:{out['line']}: {out['error']}",
            f"fix that line and run the check again, or start over with `lab lesson {lesson} --reset`",
        )
    return out


if __name__ == "__main__":
    print(json.dumps(_probe(sys.argv[1], Path(sys.argv[2]))))
