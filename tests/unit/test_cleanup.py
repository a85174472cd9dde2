"""tests/cleanup.py's shortcut: `lab down` is skipped after a block only where it would find
nothing -- a service recorded and alive in the run folder or a sibling (run-investigate), or a
compose project's state a killed run left, keeps it."""

from __future__ import annotations

import sys
from pathlib import Path

from lab.stack import procs
from lab.stack.compose.app import STATE
from tests.cleanup import _nothing_to_stop


def _env(tmp_path: Path) -> dict[str, str]:
    return {"LAB_RUN_DIR": str(tmp_path / "run")}


def test_empty_or_missing_run_folders_leave_nothing_to_stop(tmp_path: Path) -> None:
    assert _nothing_to_stop(_env(tmp_path))
    (tmp_path / "run").mkdir()
    (tmp_path / "run-investigate").mkdir()
    assert _nothing_to_stop(_env(tmp_path))
    assert not _nothing_to_stop({})  # no run folder named: the down decides


def test_a_live_service_in_a_sibling_folder_is_something_to_stop(tmp_path: Path) -> None:
    sibling = tmp_path / "run-investigate"
    sibling.mkdir()
    info = procs.spawn(
        "waiter", [sys.executable, "-c", "import signal; signal.pause()"], sibling
    )  # alive until stopped
    try:
        assert not _nothing_to_stop(_env(tmp_path))
    finally:
        procs.stop(info, sibling)
    assert _nothing_to_stop(_env(tmp_path))  # stopped: its pidfile gone with it


def test_a_compose_projects_state_is_something_to_stop(tmp_path: Path) -> None:
    sibling = tmp_path / "run-investigate"
    sibling.mkdir()
    (sibling / STATE).write_text("{}")
    assert not _nothing_to_stop(_env(tmp_path))
