"""Compose mode: the same three services from compose.yaml, on a Docker engine (lab.stack.engine).

The backend's log is followed into the run folder, so the lab above the stack reads the same
events as in native mode. Images: lab.stack.compose.images; container faults:
lab.stack.compose.containers.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import redis

from lab.common.config import LabConfig, cache_dir, home
from lab.common.files import write_atomic
from lab.common.http import http_get
from lab.stack import procs
from lab.stack.compose.containers import Containers
from lab.stack.compose.images import OFFICIAL, Images
from lab.stack.engine import Engine
from lab.stack.lifecycle import Lifecycle
from lab.common.wait import wait_until

SERVICES = ("redis", "toxiproxy", "chat")


class ComposeStack(Lifecycle, Images, Containers):
    mode = "compose"

    def __init__(self, cfg: LabConfig, docker_root: Path | None = None) -> None:
        self.cfg = cfg
        self.run_dir = cfg.run_dir.parent / "compose" if cfg.run_dir.name == "native" else cfg.run_dir
        self.cache = cache_dir()
        # LAB_DOCKER_ROOT: the private engine's data root (image cache); one engine per root.
        self.engine = Engine(self.run_dir, docker_root or Path(os.environ.get("LAB_DOCKER_ROOT", home() / "docker")))
        self._sdk: Any = None
        # One compose project per run folder: test stacks never collide with a user's.
        self.project = "chaoslab" + hashlib.sha1(str(self.run_dir).encode()).hexdigest()[:6]

    @property
    def backend_log(self) -> Path:
        return self.run_dir / "backend-log.log"

    # ----------------------------------------------------------------- verbs
    def up(self, timeout_s: float = 180.0) -> dict[str, Any]:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        return self._start_or_undo(lambda: self._up(timeout_s))  # a signal or failure: the half-start undone

    def _up(self, timeout_s: float) -> dict[str, object]:
        reusable = self._reusable()
        if reusable is not None:
            return reusable
        if (self.run_dir / "stack.json").exists():
            self.down()  # a stack of older code or compose.yaml, or unhealthy: start afresh
        self._check_ports_free()
        host = self.engine.ensure()
        self._images = self._choose_images(host)
        # The offline images are built already, tagged by their content; the official path
        # builds the chat image from python:3.11-slim as any compose user would.
        self._compose(host, "up", "-d", *(() if self._images else ("--build",)))
        self._wait_healthy(host, timeout_s)
        info = procs.read(self.run_dir, "backend-log")
        if info is None or not info.alive():
            self._follow_backend_log(host)
        state = {
            "mode": self.mode,
            "run_dir": str(self.run_dir),
            "docker_host": host,
            "project": self.project,
            "endpoints": self.cfg.endpoints(),
            "images": self._images or OFFICIAL,
            "code": self._fingerprint(),
            "reused": False,
        }
        write_atomic(self.run_dir / "stack.json", json.dumps(state, indent=2) + "\n")  # `lab status` may read it now
        return state

    def _fingerprint(self) -> str:
        from lab.stack.fingerprint import code_fingerprint

        compose = hashlib.sha256((self.cfg.root / "compose.yaml").read_bytes()).hexdigest()[:8]
        return f"{code_fingerprint()}-{compose}"

    def _reusable(self) -> dict[str, object] | None:
        """A healthy stack this run folder started, running this checkout's code and
        compose.yaml, is reused (as native mode does); anything else is started afresh."""
        try:
            state = json.loads((self.run_dir / "stack.json").read_text())
        except (OSError, ValueError):
            return None
        if state.get("code") != self._fingerprint() or not self.status()["healthy"]:
            return None
        log = procs.read(self.run_dir, "backend-log")
        if log is None or not log.alive():
            self._follow_backend_log(str(state["docker_host"]))
        return {**state, "reused": True}

    def _check_ports_free(self) -> None:
        from lab.common.config import PORT_ENV
        from lab.common.errors import UsageError
        from lab.stack import ports

        for name, port in self.cfg.ports.items():
            if not ports.is_free(self.cfg.host, port):
                who = ports.holder(port)
                raise UsageError(
                    f"port {port} ({PORT_ENV[name]}) is in use"
                    + (f" by {who}" if who else "")
                    + ": compose cannot publish it",
                    f"stop what holds it (a native stack? lab down), or {PORT_ENV[name]}=NNNNN",
                )

    def _wait_healthy(self, host: str, timeout_s: float) -> None:
        ids = self._compose(host, "ps", "-q").stdout.split()

        def healthy() -> bool:
            res = self._docker(host, "inspect", "-f", "{{.Name}} {{.State.Health.Status}}", *ids)
            return all(line.endswith(" healthy") for line in res.stdout.strip().splitlines())

        wait_until(
            healthy,
            what="compose services healthy",
            timeout_s=timeout_s,
            interval_s=0.5,
            hint="docker-compose logs shows why",
        )
        cfg = self.cfg
        wait_until(
            lambda: redis.Redis.from_url(cfg.redis_proxy_url, socket_timeout=2).ping(),
            what="redis through toxiproxy",
            timeout_s=30,
        )
        wait_until(lambda: http_get(cfg.chat_url + "/healthz")[0] == 200, what="chat through toxiproxy", timeout_s=30)

    def down(self) -> list[str]:
        report = []
        info = procs.read(self.run_dir, "backend-log")
        if info is not None:
            procs.stop(info, self.run_dir)
        host = self.engine.find()
        if host is not None:
            # Removes containers and the project's networks (before any engine stop: a stopped
            # engine leaves its bridge interfaces behind).
            self._compose(host, "down", "--remove-orphans", "-t", "5")
            report.append(f"compose project {self.project}: down")
        self.close()
        # An idle private engine is stopped (one an investigation's app still uses is left); no
        # reachable engine: what a killed run left of one is stopped.
        stopped = self._stop_engine_if_idle(host) if host is not None else self.engine.stop()
        if stopped:
            report.append(stopped)
        (self.run_dir / "stack.json").unlink(missing_ok=True)
        return report

    def status(self) -> dict[str, Any]:
        try:
            state = json.loads((self.run_dir / "stack.json").read_text())
        except (OSError, ValueError):
            state = {}
        up = bool(state)
        try:
            healthy = up and http_get(self.cfg.chat_url + "/healthz")[0] == 200
        except OSError:  # nothing listening: not healthy
            healthy = False
        return {
            "mode": self.mode,
            "up": up,
            "healthy": healthy,
            "run_dir": str(self.run_dir),
            "services": {s: {"pid": None, "alive": up} for s in SERVICES},
            "endpoints": self.cfg.endpoints(),
            **({"project": state.get("project")} if up else {}),
        }
