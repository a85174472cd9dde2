"""The native stack: redis-server, toxiproxy-server and the chat backend as local processes.

``up`` starts them in dependency order, waits for each on a readiness check with a deadline,
writes ``stack.json`` and returns; the processes stay up (detached, pidfiles in the run folder)
until ``down``. A failure or a signal during start-up stops whatever had started.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import redis

from lab.stack import topology
from lab.common.config import PORT_ENV, LabConfig
from lab.common.errors import Interrupted, LabError, UsageError
from lab.common.signals import deferred, interrupt_on
from lab.stack.fingerprint import backend_command, code_fingerprint
from lab.common.files import write_atomic
from lab.common.http import http_get
from lab.common.locks import exclusive
from lab.stack import ports, procs
from lab.stack.lifecycle import Lifecycle
from lab.stack.native_faults import ProcessFaults
from lab.common.wait import wait_until

SERVICES = ("redis", "toxiproxy", "backend")  # start order; stopped in reverse
TOXIPROXY_VERSION = "2.12.0"
STATE_FILE = "stack.json"


# The ports each service needs free before it starts.
SERVICE_PORTS = {"redis": ("redis",), "toxiproxy": ("toxiproxy", "redis_proxy", "chat_proxy"), "backend": ("backend",)}


class NativeStack(Lifecycle, ProcessFaults):
    mode = "native"

    def __init__(
        self, cfg: LabConfig, backend_env: dict[str, str] | None = None, services: tuple[str, ...] = SERVICES
    ) -> None:
        """``services``: all three, or ("redis", "toxiproxy") -- Redis behind its proxy and no
        backend, the half a foreign target is plugged into (lab investigate's link)."""
        unknown = set(services) - set(SERVICES)
        if unknown or "redis" not in services or "toxiproxy" not in services:
            raise ValueError(f"services {services!r}: redis and toxiproxy, and optionally backend")
        self.cfg = cfg
        self.run_dir = cfg.run_dir
        self.services = tuple(s for s in SERVICES if s in services)  # start order
        # Extra CHAT_* settings for the backend (a lesson's exercise file: CHAT_LAB_EXERCISE).
        self.backend_env = dict(backend_env or {})

    @property
    def with_backend(self) -> bool:
        return "backend" in self.services

    @property
    def backend_log(self) -> Path:
        return self.run_dir / "backend.log"

    # ----------------------------------------------------------------- public verbs
    def up(self, timeout_s: float = 30.0) -> dict[str, Any]:
        """Start the stack, or reuse a healthy one already up in this run folder."""
        proxies = topology.render_native(topology.load(self.cfg.topology_file), self.cfg)
        self._preflight()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        # A signal during start-up raises Interrupted (exit 128 + N, "SIGTERM during start-up"),
        # so what had started is stopped below.
        fresh = False  # from here on this call starts services: any exception stops them
        try:
            with self._lock(), interrupt_on(exc=Interrupted):
                running = [p for p in procs.recorded(self.run_dir) if p.alive()]
                if running and len(running) == len(self.services) and self._healthy():
                    if self._recorded_code() == self._fingerprint():
                        state = self._state()
                        state["reused"] = True
                        return state
                    # The backend runs older code than this checkout (the lab was updated while
                    # a stack was up): measuring it would measure the wrong code. Restart.
                if procs.recorded(self.run_dir):
                    self._stop_all()  # leftovers of a killed lab or a half-stopped stack
                self._check_ports_free()
                fresh = True
                self._start(proxies, timeout_s)
                state = self._state()
                write_atomic(
                    self.run_dir / STATE_FILE, json.dumps(state, indent=2) + "\n"
                )  # `lab status` may read it now
                state["reused"] = False
                return state
        except BaseException:
            # Also a signal after the last service came up, raised on the way out of
            # interrupt_on: it left all three running under "stopped everything that had
            # started" (the interrupt storm, 1 of 10 interruptions at start-up, CI 2026-12-02).
            if fresh:
                with deferred():  # a second Ctrl-C must not cut the clean-up short
                    self._stop_all()
                    (self.run_dir / STATE_FILE).unlink(missing_ok=True)
            raise

    def down(self) -> list[str]:
        """Stop and reap every recorded service (also those of a killed lab); report each."""
        if not self.run_dir.is_dir():
            return []
        with self._lock(), deferred():  # a Ctrl-C must not leave half the stack running
            return self._stop_all()

    def status(self) -> dict[str, Any]:
        services = {}
        recorded = {p.name: p for p in procs.recorded(self.run_dir)}
        for name in self.services:
            info = recorded.get(name)
            services[name] = {"pid": info.pid if info else None, "alive": bool(info and info.alive())}
        up = all(s["alive"] for s in services.values())
        return {
            "mode": self.mode,
            "up": up,
            "healthy": up and self._healthy(),
            "run_dir": str(self.run_dir),
            "services": services,
            "endpoints": self.cfg.endpoints(),
        }

    def backend_events(self, name: str | None = None, **match: object) -> list[dict[str, object]]:
        """The backend's JSON events (services/chat/views.py ``event``) so far, oldest first."""
        from lab.stack.events import BackendEvents

        events = BackendEvents(self.run_dir / "backend.log", from_start=True)
        events.poll()
        return [
            e
            for e in events.all
            if (name is None or e.get("event") == name) and all(e.get(k) == v for k, v in match.items())
        ]

    # ----------------------------------------------------------------- start-up
    def _preflight(self) -> None:
        if not self.cfg.toxiproxy_server.is_file():
            raise UsageError(
                f"no Toxiproxy server at {self.cfg.toxiproxy_server}",
                "run `lab setup toxiproxy` (builds it with go install; `lab doctor` lists what a run needs); without Go, use compose mode",
            )
        if shutil.which("redis-server") is None:
            raise UsageError(
                "redis-server is not installed",
                "run `lab setup redis-server` as root, or: apt-get install -y redis-server",
            )
        if not self.with_backend:
            return
        try:
            import gunicorn  # noqa: F401
            import services.chat  # noqa: F401
        except ImportError as exc:
            raise UsageError(
                f"the backend cannot be imported ({exc})", "run `make setup` and use the lab from .venv (make up)"
            ) from None

    def _check_ports_free(self) -> None:
        # Without the backend, the chat proxy is not started: its port need not be free either.
        needed = {n for s in self.services for n in SERVICE_PORTS[s]} - (set() if self.with_backend else {"chat_proxy"})
        for name, port in self.cfg.ports.items():
            if name in needed and not ports.is_free(self.cfg.host, port):
                who = ports.holder(port)
                raise UsageError(
                    f"port {port} ({PORT_ENV[name]}) is in use" + (f" by {who}" if who else ""),
                    f"stop what holds it, or choose another port: {PORT_ENV[name]}=NNNNN lab up",
                )

    def _start(self, proxies: list[topology.Proxy], timeout_s: float) -> None:
        if not self.with_backend:  # no backend: no chat proxy in front of it
            proxies = [p for p in proxies if p.name == "redis"]
        rendered = self.run_dir / "toxiproxy.json"
        topology.write(proxies, rendered)
        self._start_redis(timeout_s)
        toxi = procs.spawn(
            "toxiproxy",
            [
                str(self.cfg.toxiproxy_server),
                "-host",
                self.cfg.host,
                "-port",
                str(self.cfg.ports["toxiproxy"]),
                "-config",
                str(rendered),
            ],
            self.run_dir,
        )
        self._wait("toxiproxy", toxi, self._toxiproxy_ready, timeout_s)
        self._confirm_proxies(proxies)
        self._wait("redis through toxiproxy", toxi, lambda: self._redis(self.cfg.redis_proxy_url).ping(), timeout_s)
        if self.with_backend:
            self._start_backend(timeout_s)

    def _start_redis(self, timeout_s: float, durable: bool = False) -> procs.ProcInfo:
        # Persistence off by default: a restart loses everything. The durable variant (AOF,
        # fsync on every write) survives a SIGKILL. --dir keeps any file in the run folder.
        persistence = ["--appendonly", "yes", "--appendfsync", "always"] if durable else ["--appendonly", "no"]
        proc = procs.spawn(
            "redis",
            [
                shutil.which("redis-server") or "redis-server",
                "--bind",
                self.cfg.host,
                "--port",
                str(self.cfg.ports["redis"]),
                "--save",
                "",
                *persistence,
                "--dir",
                str(self.run_dir),
                "--daemonize",
                "no",
                "--protected-mode",
                "yes",
                # Expiry events are the checker's evidence for "expired".
                "--notify-keyspace-events",
                "Ex",
            ],
            self.run_dir,
        )
        self._wait("redis", proc, lambda: self._redis(self.cfg.redis_url).ping(), timeout_s)
        return proc

    def _start_backend(self, timeout_s: float) -> procs.ProcInfo:
        cfg = self.cfg
        env = dict(os.environ)
        env.update(
            {
                # The backend is given only the Toxiproxy address for Redis.
                "CHAT_REDIS_URL": cfg.redis_proxy_url,
                "CHAT_LAB_MODE": "1",
                "PYTHONPATH": str(cfg.root) + os.pathsep + env.get("PYTHONPATH", ""),
                "PYTHONUNBUFFERED": "1",
                **self.backend_env,
            }
        )
        backend = procs.spawn(
            "backend", backend_command(f"{cfg.host}:{cfg.ports['backend']}"), self.run_dir, env=env, cwd=cfg.root
        )
        self._wait("backend", backend, lambda: http_get(cfg.backend_url + "/healthz")[0] == 200, timeout_s)
        self._wait(
            "backend through toxiproxy", backend, lambda: http_get(cfg.chat_url + "/healthz")[0] == 200, timeout_s
        )
        return backend

    def _wait(self, what: str, proc: procs.ProcInfo, check: Callable[[], object], timeout_s: float) -> None:
        log = self.run_dir / f"{proc.name}.log"

        def exited() -> str | None:
            return None if proc.alive() else f"{proc.name} exited during start-up; log tail:\n{procs.log_tail(log)}"

        wait_until(
            check, what=f"{what} ({proc.name} pid {proc.pid})", timeout_s=timeout_s, abort=exited, hint=f"see {log}"
        )

    def _toxiproxy_ready(self) -> bool:
        status, body = http_get(self.cfg.toxiproxy_url + "/version")
        if status != 200:
            return False
        version = json.loads(body).get("version")
        if version != TOXIPROXY_VERSION:
            raise LabError(
                f"toxiproxy-server reports version {version!r}, expected {TOXIPROXY_VERSION}",
                f"rebuild it: rm {self.cfg.toxiproxy_server} && lab setup toxiproxy",
            )
        return True

    def _confirm_proxies(self, proxies: list[topology.Proxy]) -> None:
        # Toxiproxy only logs errors in its -config file: check each proxy really exists.
        _, body = http_get(self.cfg.toxiproxy_url + "/proxies")
        have = json.loads(body)
        for p in proxies:
            got = have.get(p.name)
            if got is None or got.get("listen") != p.listen or got.get("upstream") != p.upstream:
                raise LabError(
                    f"toxiproxy did not create proxy {p.name} ({p.listen} -> {p.upstream}); "
                    f"log tail:\n{procs.log_tail(self.run_dir / 'toxiproxy.log')}"
                )

    def _redis(self, url: str) -> "redis.Redis":
        return redis.Redis.from_url(url, socket_timeout=1.0, socket_connect_timeout=1.0, retry=None)

    # ----------------------------------------------------------------- health, state, stop
    def _healthy(self) -> bool:
        try:
            return bool(self._redis(self.cfg.redis_proxy_url).ping()) and (
                not self.with_backend or http_get(self.cfg.chat_url + "/healthz")[0] == 200
            )
        except Exception:
            return False

    def _state(self) -> dict[str, object]:
        return {
            "mode": self.mode,
            "run_dir": str(self.run_dir),
            "endpoints": self.cfg.endpoints(),
            "pids": {p.name: p.pid for p in procs.recorded(self.run_dir)},
            "code": self._fingerprint(),
        }

    def _fingerprint(self) -> str:
        """The code the backend runs: the checkout's, plus any extra settings and the exercise
        file they name (a stack is reused only if it runs exactly this)."""
        extra = "".join(f"{k}={v}\n" for k, v in sorted(self.backend_env.items()))
        exercise = self.backend_env.get("CHAT_LAB_EXERCISE")
        if not extra:
            return code_fingerprint()
        import hashlib

        h = hashlib.sha256(code_fingerprint().encode() + extra.encode())
        if exercise and Path(exercise).is_file():
            h.update(Path(exercise).read_bytes())
        return h.hexdigest()[:16]

    def _recorded_code(self) -> str | None:
        try:
            return str(json.loads((self.run_dir / STATE_FILE).read_text()).get("code"))
        except (OSError, ValueError):
            return None

    def _stop_all(self) -> list[str]:
        report = []
        recorded = {p.name: p for p in procs.recorded(self.run_dir)}
        order = [n for n in reversed(self.services) if n in recorded] + [n for n in recorded if n not in self.services]
        for name in order:
            outcome = procs.stop(recorded[name], self.run_dir)
            report.append(f"{name} (pid {recorded[name].pid}): {outcome}")
        for info in procs.unrecorded(self.run_dir):  # started by a lab killed before it recorded them
            report.append(f"a service no pidfile named (pid {info.pid}): {procs.stop(info, self.run_dir)}")
        (self.run_dir / STATE_FILE).unlink(missing_ok=True)
        return report

    def _lock(self) -> AbstractContextManager[None]:
        return exclusive(
            self.run_dir / "lock",
            LabError(
                f"another lab up/down is running on {self.run_dir}", "wait for it to finish, or use another LAB_RUN_DIR"
            ),
        )
