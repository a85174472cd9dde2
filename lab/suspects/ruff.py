"""ruff, for what it already checks: RUF006 (a task nobody keeps) and the ASYNC rules (blocking
calls in async code). Run isolated from the project's own ruff settings, without a cache."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

SELECT = "RUF006,ASYNC"


def _binary() -> str | None:
    # The lab's venv first (ruff is pinned in requirements.lock), then PATH.
    here = Path(sys.executable).with_name("ruff")
    return str(here) if here.is_file() else shutil.which("ruff")


def run(files: list[Path]) -> tuple[list[dict[str, Any]], str | None]:
    """(ruff's findings as JSON objects, None) or ([], why ruff could not run)."""
    exe = _binary()
    if exe is None:
        return [], "ruff not found (make setup installs it into .venv)"
    try:
        res = subprocess.run(
            [
                exe,
                "check",
                "--isolated",
                "--no-cache",
                "--select",
                SELECT,
                "--output-format",
                "json",
                "--exit-zero",
                *map(str, files),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [], f"ruff did not run: {exc}"
    if res.returncode != 0:
        return [], f"ruff exited {res.returncode}: {res.stderr.strip()[:300]}"
    try:
        found = json.loads(res.stdout or "[]")
    except ValueError:
        return [], f"ruff printed no JSON: {res.stdout[:200]!r}"
    return [f for f in found if isinstance(f, dict)], None
