"""The target as a real process: its own process group, a pidfile and a log in the run folder,
readiness with a deadline, and stopped on success, failure or Ctrl-C."""

from __future__ import annotations

import os
import shutil
import socket
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.common.errors import LabError, NotReady
from lab.common.files import owned_tmp, sweep_tmp
from lab.investigate.spec.parse import Spec, fill
from lab.stack import procs
from lab.common.wait import wait_until

NAME = "target"
TAIL_LINES = 20
# The target's temporary folder (TMPDIR, TMP, TEMP): the lab stops it by a signal at its default
# disposition, so an app's own clean-up at exit (Python's TemporaryDirectory, atexit) never
# runs -- its temp files are removed with this folder instead (seen: examples/cache_aside_app.py
# left a SQLite folder in /tmp per run).
TMP_PREFIX = "chaoslab-target-"
TMP_VARS = ("TMPDIR", "TMP", "TEMP")


class TargetError(LabError):
    """The target did not start, never got ready, or answered outside its spec: bad input, as a
    malformed spec is (exit 2), never mistaken for "anomalies diagnosed" (exit 1)."""

    exit_code = 2


def tail(path: Path, lines: int = TAIL_LINES) -> str:
    try:
        got = path.read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return "(no output)"
    return "\n".join("  | " + line for line in got) or "  | (no output)"


def placeholders(spec: Spec, redis_host: str, redis_port: int, model_url: str | None = None) -> dict[str, str]:
    return {
        **({"model_url": model_url} if model_url else {}),
        "redis_host": redis_host,
        "redis_port": str(redis_port),
        "redis_url": f"redis://{redis_host}:{redis_port}/0",
        "port": str(spec.http.port),
        "python": sys.executable,
        "spec_dir": str(spec.file.resolve().parent),
        "cwd": str(spec.start.cwd),
    }


def _get(url: str) -> int:
    req = urllib.request.Request(url, headers={"User-Agent": "chaoslab"})
    try:
        with urllib.request.urlopen(req, timeout=2.0) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def _accepts(host: str, port: int) -> bool:
    with socket.create_connection((host, port), timeout=1.0):
        return True


@contextmanager
def running(
    spec: Spec, run_dir: Path, redis_host: str, redis_port: int, link: Any = None, model_url: str | None = None
) -> Iterator[procs.ProcInfo]:
    """Start the target, wait until ready, yield it; stop its whole process group on the way out.
    An external app is only waited for; a compose app's stack (``link``) started it already.
    ``model_url``: the stand-in model's address ([model]); its variables are set last, so a
    provider's address left in [start] env cannot send the app's calls past the stand-in."""
    from urllib.parse import urlsplit

    if spec.start.external:
        yield from _external(spec)
        return
    if spec.start.compose is not None:
        yield from _compose_app(spec, link, run_dir / f"{NAME}.log")
        return
    values = placeholders(spec, redis_host, redis_port, model_url)
    argv = [fill(a, values) for a in spec.start.command]
    env = dict(os.environ)
    env.update({k: fill(v, values) for k, v in spec.start.env.items()})
    if spec.model is not None and model_url:
        env.update({k: fill(v, values) for k, v in spec.model.env.items()})
    host = urlsplit(spec.http.base_url).hostname or "127.0.0.1"
    log = run_dir / f"{NAME}.log"
    log.unlink(missing_ok=True)
    if _port_taken(host, spec.http.port):
        raise TargetError(
            f"port {spec.http.port} (http.port) is already in use before the target starts",
            "stop what holds it, or choose another: --set http.port=NNNNN",
        )
    sweep_tmp(TMP_PREFIX)  # a killed run's (lab down sweeps them too)
    tmp = owned_tmp(TMP_PREFIX)
    # A folder the spec names for its own use is the app's to keep.
    env.update({k: str(tmp) for k in TMP_VARS if k not in spec.start.env})
    try:
        try:
            info = procs.spawn(NAME, argv, run_dir, env=env, cwd=spec.start.cwd)
        except OSError as exc:
            raise TargetError(
                f"cannot start the target: {argv[0]!r}: {exc.strerror}", "check start.command and start.cwd in the spec"
            ) from None
        try:
            _wait_ready(spec, info, host, log)
            yield info
        finally:
            procs.stop(info, run_dir, timeout_s=5.0)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class _Running(procs.ProcInfo):
    """An app the lab did not start: not the lab's to watch or stop."""

    def alive(self) -> bool:
        return True


def _external(spec: Spec) -> Iterator[procs.ProcInfo]:
    """An app that already runs: ready when it answers; nothing to start or stop."""
    from urllib.parse import urlsplit

    host = urlsplit(spec.http.base_url).hostname or "127.0.0.1"
    info = _Running(NAME, 0, 0, ["(external: started by its owner)"])
    expected = f"the running app at {spec.http.base_url} answering"
    try:
        wait_until(
            lambda: (
                _port_taken(host, spec.http.port) and any(_get(spec.url(p)) < 500 for p in ("/", spec.history.path))
            ),
            what=f"target {spec.name} ({expected})",
            timeout_s=spec.start.ready_timeout_s,
            interval_s=0.1,
        )
    except NotReady as exc:
        raise TargetError(
            f"{exc.message}\nexpected: {expected} within {spec.start.ready_timeout_s:g} s",
            "[start] external = true: start the app yourself, its Redis at the address lab proxy up printed",
        ) from None
    yield info


@dataclass(frozen=True)
class _Container(procs.ProcInfo):
    """The backend's container in the app's compose project: alive while it runs."""

    stack: Any = None

    def alive(self) -> bool:
        return bool(self.stack.backend_running())


def _compose_app(spec: Spec, stack: Any, log: Path) -> Iterator[procs.ProcInfo]:
    """The backend its compose project runs, ready when it answers (its container's log is the
    target's log); the project is the stack's to remove."""
    argv = [f"(compose service {spec.start.compose.service})"]  # type: ignore[union-attr]
    info = _Container(NAME, stack.backend_pid(), 0, argv, stack)
    _wait_ready(spec, info, "127.0.0.1", log)
    yield info


def _port_taken(host: str, port: int) -> bool:
    try:
        return _accepts(host, port)
    except OSError:
        return False


def _wait_ready(spec: Spec, info: procs.ProcInfo, host: str, log: Path) -> None:
    if spec.http.ready_path:
        expected = f"GET {spec.http.ready_path} answering 2xx"

        def check() -> bool:
            return 200 <= _get(spec.url(spec.http.ready_path or "/")) < 300
    else:
        # No health endpoint: the port accepts and / or the history path answers (any status
        # under 500: a 404 on / is still an app that is up).
        expected = f"port {spec.http.port} accepting and GET / or GET {spec.history.path} answering"

        def check() -> bool:
            _accepts(host, spec.http.port)
            return any(_get(spec.url(p)) < 500 for p in ("/", spec.history.path))

    def exited() -> str | None:
        if info.alive():
            return None
        # A container that exits at once may still be seen running by the stack's own start: it
        # is then found gone here, and says so as the stack would (the same words either way).
        return (
            "the target exited during start-up"
            if not spec.start.compose
            else "the backend's container exited during start-up"
        )

    try:
        wait_until(
            check,
            what=f"target {spec.name} ({expected})",
            timeout_s=spec.start.ready_timeout_s,
            interval_s=0.1,
            abort=exited,
        )
    except NotReady as exc:
        raise TargetError(
            f"{exc.message}\nexpected: {expected} within {spec.start.ready_timeout_s:g} s "
            f"(start.ready_timeout_s)\ncommand: {' '.join(info.argv)}\n"
            f"last lines of its output ({log}):\n{tail(log)}",
            "run the command by hand from start.cwd to see why; nothing was left running",
        ) from None
