"""lab.stack.engine.Engine.stale / stop_stale: an engine left by an earlier killed run (its
command line names our exec root or socket, our pidfile is gone or names a dead process) is
found and stopped before a new one starts.

No real dockerd is needed to test the detection: the "engine" here is a real process -- Python
run under the name `dockerd` (argv[0]) with our exec root in its arguments -- which is exactly
what the detection reads from /proc/<pid>/cmdline."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.stack import procs
from lab.stack.engine import Engine
from lab.common.wait import wait_until

IDLE = "import signal; signal.pause()"  # idles until a signal ends it


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    (tmp_path / "run").mkdir()
    return Engine(tmp_path / "run", tmp_path / "data")


def _spawn(argv0: str, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [argv0, "-c", IDLE, *args], executable=sys.executable, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
    )


@pytest.fixture
def leftover(engine: Engine) -> Iterator[subprocess.Popen[bytes]]:
    proc = _spawn("dockerd", "--exec-root", f"{engine.exec_root}/exec", "-H", engine.private_host)
    # Right after exec its /proc cmdline can still be empty for a moment: wait until it names us.
    wait_until(
        lambda: f"{engine.exec_root}/exec" in Path(f"/proc/{proc.pid}/cmdline").read_text(),
        what="the dummy engine's cmdline",
        timeout_s=10,
    )
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def test_an_engine_naming_our_exec_root_with_no_pidfile_is_stale_and_stopped(
    engine: Engine, leftover: subprocess.Popen[bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    assert [pid for pid, _ in engine.stale()] == [leftover.pid]
    report = engine.stop_stale()
    assert report == [f"pid {leftover.pid}: stopped"]
    assert leftover.wait(timeout=10) == -15  # SIGTERM: the engine's own clean shutdown
    err = capsys.readouterr().err
    assert f"a Docker engine left by an earlier run holds {engine.exec_root}" in err
    assert f"pid {leftover.pid}" in err
    assert engine.stale() == []


def test_a_pidfile_naming_a_dead_process_does_not_protect_the_leftover(
    engine: Engine, leftover: subprocess.Popen[bytes]
) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    procs.pidfile(engine.run_dir, "dockerd").write_text(
        json.dumps({"name": "dockerd", "pid": dead.pid, "start_ticks": 1, "argv": ["dockerd"]})
    )
    assert [pid for pid, _ in engine.stale()] == [leftover.pid]
    # `lab down --mode compose` (Engine.stop) stops it too, and drops the stale pidfile.
    assert engine.stop() == f"dockerd (pid {dead.pid}): not running; pid {leftover.pid}: stopped"
    assert not procs.pidfile(engine.run_dir, "dockerd").exists()


def test_our_live_engine_and_unrelated_processes_are_left_alone(
    engine: Engine, leftover: subprocess.Popen[bytes]
) -> None:
    ticks = procs._start_ticks(leftover.pid)
    procs.pidfile(engine.run_dir, "dockerd").write_text(
        json.dumps({"name": "dockerd", "pid": leftover.pid, "start_ticks": ticks, "argv": ["dockerd"]})
    )
    # Not an engine program, though it names the exec root; and an engine of another root.
    bystander = _spawn("python-helper", "--exec-root", str(engine.exec_root))
    other = _spawn("dockerd", "--exec-root", "/run/chaoslab-someone-else/exec")
    try:
        for p in (bystander, other):
            wait_until(
                lambda: "--exec-root" in Path(f"/proc/{p.pid}/cmdline").read_text(),
                what="the dummies' cmdlines",
                timeout_s=10,
            )
        assert engine.stale() == []  # the recorded engine is alive: it is ours, not a leftover
        assert engine.stop_stale() == []
        assert leftover.poll() is None and bystander.poll() is None and other.poll() is None
    finally:
        for p in (bystander, other):
            p.kill()
            p.wait()
