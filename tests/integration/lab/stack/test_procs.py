"""A service whose pidfile was never written -- its lab SIGKILLed between starting it and
recording it (the interrupt storm under load, 2026-12-03) -- is still found by the run folder
its environment carries, and stopped with its group; another run's services are not touched."""

from __future__ import annotations

import os
import sys
import threading
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
        # Its group's other member (the sleeper's child) got the same signal; it may exit a
        # moment after the leader (a loaded fresh-clone CI run saw it still there), and `lab down`
        # returns only once it has.
        assert procs.group_members(lost.pid) == []
        assert kept.alive()
    finally:
        procs.stop(kept, other)
        if lost.alive():
            procs.stop(lost, mine)


def test_stop_returns_once_the_group_is_gone_not_only_its_leader(tmp_path: Path) -> None:
    """A child that takes its time on SIGTERM (a worker finishing its request): stop() returns
    after it has exited on its own, not when the leader has (and does not SIGKILL it then). The
    child finishes when the test lets it -- a FIFO it reads, written once stop() is seen waiting."""
    done, ready, term, release = (tmp_path / n for n in ("child-done", "child-ready", "child-term", "release"))
    os.mkfifo(release)
    slow_child = (
        "import pathlib, signal, sys\n"
        "def term(*_):\n"
        f"    pathlib.Path({str(term)!r}).write_text('x'); open({str(release)!r}).read()\n"
        f"    pathlib.Path({str(done)!r}).write_text('x'); sys.exit(0)\n"
        f"signal.signal(signal.SIGTERM, term); pathlib.Path({str(ready)!r}).write_text('x'); signal.pause()"
    )
    argv = [
        sys.executable,
        "-c",
        f"import signal, subprocess, sys; subprocess.Popen([sys.executable, '-c', {slow_child!r}]); signal.pause()",
    ]
    info = procs.spawn("slow", argv, tmp_path)
    try:
        # Its handler in place (a SIGTERM before it would take the default action: a loaded CI
        # run's child died so, at its start).
        wait_until(lambda: ready.exists() or None, what="the child's handler set", timeout_s=20)
        outcome: list[str] = []
        stopping = threading.Thread(target=lambda: outcome.append(procs.stop(info, tmp_path)))
        stopping.start()
        wait_until(lambda: term.exists() or None, what="the child's SIGTERM", timeout_s=20)
        assert stopping.is_alive(), "stop() returned while the group's child was still finishing"
        # The child's request ends (non-blocking: a child no longer reading is an error, not a hang).
        fd = os.open(release, os.O_WRONLY | os.O_NONBLOCK)
        os.write(fd, b"go")
        os.close(fd)
        stopping.join(timeout=30)
        assert outcome == ["stopped"]
        assert procs.group_members(info.pid) == [] and not info.alive()
        assert done.exists(), "the child was killed before it finished"
    finally:
        procs.kill_now(info, tmp_path)
