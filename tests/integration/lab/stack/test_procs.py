"""A service whose pidfile was never written -- its lab SIGKILLed between starting it and
recording it (the interrupt storm under load, 2026-12-03) -- is still found by the run folder
its environment carries, and stopped with its group; another run's services are not touched."""

from __future__ import annotations

import sys
from pathlib import Path

from lab.stack import procs
from lab.stack.native import NativeStack
from lab.common.config import LabConfig
from lab.common.wait import wait_until

# A service that runs until it is stopped (and a child in its group): it waits for a signal.
SLEEPER = [
    sys.executable,
    "-c",
    "import signal, subprocess, sys; subprocess.Popen([sys.executable, '-c', 'import signal; signal.pause()']); signal.pause()",
]


def test_a_service_no_pidfile_names_is_found_by_its_run_folder_and_stopped(tmp_path: Path) -> None:
    mine, other = tmp_path / "run", tmp_path / "other-run"
    mine.mkdir()
    other.mkdir()
    lost = procs.spawn("lost", SLEEPER, mine)
    kept = procs.spawn("kept", SLEEPER, other)
    try:
        procs.pidfile(mine, "lost").unlink()  # as if the lab died before writing it
        found = procs.unrecorded(mine)
        assert [p.pid for p in found] == [lost.pid]
        assert procs.unrecorded(other) == []  # recorded there: not unrecorded
        cfg = LabConfig.from_env({"LAB_RUN_DIR": str(mine)})
        report = NativeStack(cfg).down()
        assert report == [f"a service no pidfile named (pid {lost.pid}): stopped"], report
        assert not lost.alive()
        # Its group's other member (the sleeper's child) got the same signal and exits on it, a
        # moment after the leader on a loaded machine (a fresh-clone CI run saw it still there).
        wait_until(lambda: procs.group_members(lost.pid) == [] or None, what="the group gone", timeout_s=5)
        assert kept.alive()
    finally:
        procs.stop(kept, other)
        if lost.alive():
            procs.stop(lost, mine)
