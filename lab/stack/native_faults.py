"""The native stack's process faults: the Stack verbs lab.faults.redis_pause, redis_restart and
backend_restart use (ComposeStack has the same ones, on containers) -- signals and processes."""

from __future__ import annotations

import os
import signal
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol

from lab.common.config import LabConfig
from lab.common.errors import LabError
from lab.stack import ports, procs
from lab.common.wait import wait_until


class _Restartable(Protocol):
    """What a restart uses of NativeStack: its lock and its start-up steps."""

    cfg: LabConfig
    run_dir: Path

    def _lock(self) -> AbstractContextManager[None]: ...
    def _start_redis(self, timeout_s: float, durable: bool = False) -> procs.ProcInfo: ...
    def _start_backend(self, timeout_s: float) -> procs.ProcInfo: ...
    def service(self, name: str) -> procs.ProcInfo: ...
    def instance(self, service: str) -> str: ...


class ProcessFaults:
    """Mixed into NativeStack."""

    cfg: LabConfig
    run_dir: Path

    # The Stack verbs the process faults use (lab.stack.Stack); ComposeStack has the same ones.
    def service(self, name: str) -> procs.ProcInfo:
        info = procs.read(self.run_dir, name)
        if info is None or not info.alive():
            raise LabError(f"{name} is not running in {self.run_dir}", "start the stack: lab up")
        return info

    def instance(self, service: str) -> str:
        """What runs now: a restart gives a new pid (the pidfile also pins its start time)."""
        return f"{service} pid {self.service(service).pid}"

    def pause_redis(self) -> None:
        os.kill(self.service("redis").pid, signal.SIGSTOP)

    def resume_redis(self) -> None:
        pid = self.service("redis").pid
        os.kill(pid, signal.SIGCONT)
        wait_until(lambda: procs.state(pid) not in ("T", "t"), what="redis resumed", timeout_s=10)

    def redis_paused(self) -> str | None:
        """Evidence from the kernel that redis-server is stopped, None if it runs."""
        pid = self.service("redis").pid
        st = procs.state(pid)
        return f"redis-server pid {pid} in state {st} (stopped)" if st in ("T", "t") else None

    def heal(self) -> None:
        """After success, failure or Ctrl-C: Redis not left stopped, nor refusing writes (quiet if
        it is gone)."""
        try:
            pid = self.service("redis").pid
            if procs.state(pid) in ("T", "t"):
                self.resume_redis()
        except (LabError, ProcessLookupError):
            pass
        serve_writes(self.cfg.redis_url)

    def restart_redis(self: _Restartable, *, durable: bool, timeout_s: float = 30.0) -> str:
        """SIGKILL redis-server (no shutdown save) and start it again on the same port."""
        with self._lock():
            procs.kill_now(self.service("redis"), self.run_dir)
            # The killed server's connections linger on its port for a moment (FIN_WAIT until
            # the peer acknowledges): a restart in that moment fails with "Address already in
            # use" (seen in 1 of 3 to 5 restarts with an idle client connected).
            host, port = self.cfg.host, self.cfg.ports["redis"]
            wait_until(
                lambda: ports.is_free(host, port),
                what=f"port {port} bindable after the kill",
                timeout_s=10.0,
                interval_s=0.01,
            )
            self._start_redis(timeout_s, durable=durable)
        return self.instance("redis")

    def restart_backend(self: _Restartable, timeout_s: float = 30.0) -> str:
        """Stop the backend (SIGTERM: gunicorn finishes in-flight requests) and start it again."""
        with self._lock():
            procs.stop(self.service("backend"), self.run_dir)
            self._start_backend(timeout_s)
        return self.instance("backend")


# lab.faults.write_refused's switch: Redis refuses writes while it asks for a replica it lacks.
REFUSING = "min-replicas-to-write"


def serve_writes(redis_url: str) -> None:
    """Redis serving writes again, whatever a run killed mid-fault left set (quiet if Redis is gone:
    a heal must not fail the run it ends)."""
    import redis

    try:
        with redis.Redis.from_url(redis_url, socket_timeout=5) as r:
            if r.config_get(REFUSING).get(REFUSING) not in (None, "0"):
                r.config_set(REFUSING, 0)
    except redis.RedisError:
        pass
