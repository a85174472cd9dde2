"""Detached service processes with pidfiles that survive the lab process that started them.

A pidfile records the pid *and* its kernel start time, so a recycled pid is never mistaken for
ours. Each service runs in its own session (process group) so stopping it also stops its
children (gunicorn's worker, for one). Every service also carries its run folder in its
environment (RUN_MARK): a lab SIGKILLed between starting a service and writing its pidfile
leaves a process no pidfile names, and `lab down` still finds it (unrecorded).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from lab.common.files import write_atomic
from lab.common.wait import wait_until
from lab.common.errors import NotReady

RUN_MARK = "CHAOSLAB_RUN_DIR"


@dataclass(frozen=True)
class ProcInfo:
    name: str
    pid: int
    start_ticks: int
    argv: list[str]

    def alive(self) -> bool:
        return _start_ticks(self.pid) == self.start_ticks

    def as_json(self) -> dict[str, object]:
        return {"name": self.name, "pid": self.pid, "start_ticks": self.start_ticks, "argv": self.argv}


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # comm may contain spaces and parentheses: split after the last ')'.
    return raw[raw.rindex(")") + 2 :].split()


def _start_ticks(pid: int) -> int | None:
    """Kernel start time of a live process, None if gone or a zombie (reaping it if ours)."""
    fields = _stat_fields(pid)
    if fields is None:
        return None
    if fields[0] in ("Z", "X"):
        try:
            os.waitpid(pid, os.WNOHANG)  # our own child: reap it
        except ChildProcessError:
            pass
        return None
    return int(fields[19])  # field 22 of stat; fields[0] is field 3


def pidfile(run_dir: Path, name: str) -> Path:
    return run_dir / f"{name}.pid"


def spawn(
    name: str, argv: list[str], run_dir: Path, env: dict[str, str] | None = None, cwd: Path | None = None
) -> ProcInfo:
    """Start a service detached (own session, stdin closed, output to <name>.log) and record it."""
    log = open(run_dir / f"{name}.log", "ab")
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**(os.environ if env is None else env), RUN_MARK: str(run_dir.resolve())},
            cwd=cwd or run_dir,
        )
    finally:
        log.close()
    ticks = _start_ticks(proc.pid)
    info = ProcInfo(name, proc.pid, ticks if ticks is not None else -1, argv)
    # Written before any wait: a lab killed during start-up still leaves a trail for `lab down`.
    # Atomically: a reader (a test, `lab down`, `lab status`) that finds the file finds it whole;
    # read() deletes a pidfile it cannot parse, which would lose the trail.
    write_atomic(pidfile(run_dir, name), json.dumps(info.as_json()))
    # Popen would warn (ResourceWarning) if garbage-collected while the child runs; the pidfile
    # is the handle from here on, and _start_ticks reaps the child if we are still its parent.
    proc.returncode = 0
    return info


def read(run_dir: Path, name: str) -> ProcInfo | None:
    path = pidfile(run_dir, name)
    try:
        data = json.loads(path.read_text())
        return ProcInfo(data["name"], int(data["pid"]), int(data["start_ticks"]), list(data["argv"]))
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError):
        path.unlink(missing_ok=True)  # unreadable pidfile: nothing we can safely signal
        return None


def recorded(run_dir: Path) -> list[ProcInfo]:
    if not run_dir.is_dir():
        return []
    infos = [read(run_dir, p.stem) for p in sorted(run_dir.glob("*.pid"))]
    return [i for i in infos if i is not None]


def unrecorded(run_dir: Path) -> list[ProcInfo]:
    """Live processes started for ``run_dir`` (RUN_MARK in the environment they were started
    with) that no pidfile names -- a lab killed between starting a service and recording it --
    as session leaders to stop; their children go with their groups."""
    mark = f"{RUN_MARK}={run_dir.resolve()}".encode()
    known = {p.pid for p in recorded(run_dir)}
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in known or int(entry.name) == os.getpid():
            continue
        pid = int(entry.name)
        try:
            marked = mark in (entry / "environ").read_bytes().split(b"\0")
            leader = os.getsid(pid) == pid
        except OSError:
            continue
        ticks = _start_ticks(pid)
        if marked and leader and ticks is not None and state(pid) not in ("Z", "X"):
            found.append(ProcInfo(f"unrecorded-{pid}", pid, ticks, []))
    return found


def stop(info: ProcInfo, run_dir: Path, timeout_s: float = 10.0) -> str:
    """SIGTERM the service's process group, SIGKILL it after ``timeout_s``; remove its pidfile.
    Returns once the whole group is gone, not only its leader: a worker the leader signalled
    outlives it by a few ms, and `lab down` promises nothing left running when it returns."""
    outcome = "stopped" if info.alive() else "not running"
    # The group may also outlive a leader long gone (an orphaned worker): stopped the same way.
    if not _group_gone(info):
        _signal_group(info.pid, signal.SIGTERM)
        try:
            wait_until(lambda: _group_gone(info), what=f"{info.name} exit", timeout_s=timeout_s, interval_s=0.02)
        except NotReady:
            _signal_group(info.pid, signal.SIGKILL)
            wait_until(
                lambda: _group_gone(info), what=f"{info.name} exit after SIGKILL", timeout_s=5.0, interval_s=0.02
            )
            outcome = "killed"
    pidfile(run_dir, info.name).unlink(missing_ok=True)
    return outcome


def _group_gone(info: ProcInfo) -> bool:
    return not info.alive() and not group_members(info.pid)


def kill_now(info: ProcInfo, run_dir: Path) -> None:
    """SIGKILL the service's group at once (a crash, not a shutdown) and wait until it is gone."""
    _signal_group(info.pid, signal.SIGKILL)
    wait_until(lambda: _group_gone(info), what=f"{info.name} gone after SIGKILL", timeout_s=10.0, interval_s=0.01)
    pidfile(run_dir, info.name).unlink(missing_ok=True)


def state(pid: int) -> str | None:
    """The process state letter (R, S, T = stopped, Z...), None if gone."""
    fields = _stat_fields(pid)
    return fields[0] if fields else None


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def group_members(pgid: int) -> list[int]:
    """Live pids whose process group is ``pgid`` (used to prove nothing was left behind)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        if fields and fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
            out.append(int(entry.name))
    return out


def log_tail(path: Path, lines: int = 15) -> str:
    """The last lines of a service's log, for an error that says why it did not start."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
