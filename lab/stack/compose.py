"""Compose mode: the same three services from compose.yaml, on a Docker engine (lab.stack.engine).

Images: the official ones when the engine has them or can pull them; otherwise equivalents
built offline -- one Debian rootfs from debootstrap (redis-server, python3), cached as a tarball
outside the engine's data root; a Toxiproxy image with the go-install binaries at the official
paths; the chat image from wheels downloaded on the host. Built only when missing (and the chat
image through the build cache). The backend's log is followed into the run folder, so the lab
above the stack reads the same events as in native mode.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from functools import partial, wraps
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import redis

from lab.config import LabConfig
from lab.errors import LabError, UsageError
from lab.stack import procs
from lab.stack.lifecycle import Lifecycle
from lab.stack.engine import DOCKER, Engine
from lab.http import http_get
from lab.wait import wait_until

OFFICIAL = {"redis": "redis:7.0.15", "toxiproxy": "ghcr.io/shopify/toxiproxy:2.12.0",
            "chat_base": "python:3.11-slim-bookworm"}
BASE_IMAGE = "chaoslab/base:bookworm"
TOXIPROXY_IMAGE = "chaoslab/toxiproxy:2.12.0"
BASE_PACKAGES = "redis-server,python3,python3-venv,ca-certificates"
SERVICES = ("redis", "toxiproxy", "chat")
# The lab's service names (native mode's) -> compose services.
SERVICE_OF = {"redis": "redis", "toxiproxy": "toxiproxy", "backend": "chat", "chat": "chat"}
# Redis's container reads this file at every start (compose.yaml): "yes" = AOF on. A restart
# of the same container re-runs the same command, so this is how the durable variant survives.
APPENDONLY_FLAG = ("/data", "lab-appendonly")


P = ParamSpec("P")
R = TypeVar("R")


def _engine_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """The docker SDK's errors as LabError (the runner reports a fault it could not apply as
    the cell's fault error, and the CLI prints it without a traceback)."""
    @wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        import docker.errors
        import requests

        try:
            return fn(*args, **kwargs)
        except (docker.errors.DockerException, requests.RequestException) as exc:
            raise LabError(f"{fn.__name__}: the Docker engine refused: {exc}",
                           "is the compose stack up? lab status --mode compose") from None
    return wrapper


class ComposeStack(Lifecycle):
    mode = "compose"

    def __init__(self, cfg: LabConfig, docker_root: Path | None = None) -> None:
        self.cfg = cfg
        self.run_dir = cfg.run_dir.parent / "compose" if cfg.run_dir.name == "native" else cfg.run_dir
        self.cache = cfg.root / ".lab" / "cache"
        # LAB_DOCKER_ROOT: the private engine's data root (image cache); one engine per root.
        self.engine = Engine(self.run_dir, docker_root or Path(os.environ.get(
            "LAB_DOCKER_ROOT", cfg.root / ".lab" / "docker")))
        self._sdk: Any = None
        # One compose project per run folder: test stacks never collide with a user's.
        self.project = "chaoslab" + hashlib.sha1(str(self.run_dir).encode()).hexdigest()[:6]

    # ----------------------------------------------------------------- helpers
    def _env(self, host: str) -> dict[str, str]:
        env = {**os.environ, "DOCKER_HOST": host, "COMPOSE_PROJECT_NAME": self.project}
        env.update({f"LAB_{k.upper()}_PORT": str(v) for k, v in self.cfg.ports.items()})
        env.update(getattr(self, "_images", {}))
        return env

    def _docker(self, host: str, *args: str, timeout: float = 300, check: bool = True,
                **kw: Any) -> subprocess.CompletedProcess[str]:
        res = subprocess.run([DOCKER, *args], env=self._env(host), capture_output=True, text=True,
                             timeout=timeout, **kw)
        if check and res.returncode != 0:
            raise LabError(f"docker {' '.join(args[:3])} failed: {res.stderr.strip()[-400:]}")
        return res

    def _compose(self, host: str, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        compose = shutil.which("docker-compose")
        if compose is None:
            raise LabError("docker-compose is not installed", "run `make setup` as root")
        res = subprocess.run([compose, "-f", str(self.cfg.root / "compose.yaml"), *args],
                             env=self._env(host), capture_output=True, text=True, timeout=timeout,
                             cwd=self.cfg.root)
        if res.returncode != 0:
            raise LabError(f"docker-compose {' '.join(args[:2])} failed: {res.stderr.strip()[-600:]}")
        return res

    def _has_image(self, host: str, ref: str) -> bool:
        return self._docker(host, "image", "inspect", ref, check=False).returncode == 0

    def _pullable(self, host: str, ref: str) -> bool:
        try:
            return self._docker(host, "pull", "-q", ref, check=False, timeout=30).returncode == 0
        except subprocess.TimeoutExpired:
            return False

    # ----------------------------------------------------------------- images
    def _choose_images(self, host: str) -> dict[str, str]:
        """Official images when available; else the offline equivalents (built if missing)."""
        if all(self._has_image(host, r) or self._pullable(host, r) for r in OFFICIAL.values()):
            return {}
        self._base_image(host)
        self._toxiproxy_image(host)
        self._wheels()
        return {"REDIS_IMAGE": BASE_IMAGE, "TOXIPROXY_IMAGE": TOXIPROXY_IMAGE,
                "CHAT_BASE_IMAGE": BASE_IMAGE, "CHAT_IMAGE": "chaoslab/chat:offline"}

    def _base_image(self, host: str) -> None:
        if self._has_image(host, BASE_IMAGE):
            return
        tarball = self.cache / "base-bookworm.tar"
        if not tarball.exists():
            self.cache.mkdir(parents=True, exist_ok=True)
            rootfs = Path(tempfile.mkdtemp(prefix="chaoslab-rootfs-"))
            try:
                res = subprocess.run(["debootstrap", "--variant=minbase", f"--include={BASE_PACKAGES}",
                                      "bookworm", str(rootfs)], capture_output=True, text=True,
                                     timeout=900)
                if res.returncode != 0:
                    raise LabError(f"debootstrap failed: {res.stdout[-300:]}{res.stderr[-300:]}",
                                   "is Debian's mirror reachable? (apt-get update)")
                partial = tarball.with_suffix(".part")
                subprocess.run(["tar", "-C", str(rootfs), "-cf", str(partial), "."], check=True,
                               timeout=600)
                partial.rename(tarball)  # only a complete tarball is ever cached
            finally:
                shutil.rmtree(rootfs, ignore_errors=True)
        with open(tarball, "rb") as fh:
            self._docker(host, "import", "-", BASE_IMAGE, stdin=fh, timeout=600)

    def _toxiproxy_image(self, host: str) -> None:
        if self._has_image(host, TOXIPROXY_IMAGE):
            return
        ctx = Path(tempfile.mkdtemp(prefix="chaoslab-tpctx-"))
        try:
            for name in ("toxiproxy-server", "toxiproxy-cli"):
                src = self.cfg.bin_dir / name
                if not src.exists():
                    raise LabError(f"no {src} to build the offline Toxiproxy image from",
                                   "run `make setup` (builds Toxiproxy with go install)")
                shutil.copy(src, ctx / name)
            self._docker(host, "build", "-q", "-t", TOXIPROXY_IMAGE, "--build-arg",
                         f"BASE_IMAGE={BASE_IMAGE}", "-f",
                         str(Path(__file__).parent / "compose" / "toxiproxy.Dockerfile"), str(ctx))
        finally:
            shutil.rmtree(ctx, ignore_errors=True)

    def _wheels(self) -> None:
        """The chat image's wheels, downloaded on the host (no network inside the build)."""
        wheels = self.cfg.root / "services" / "chat" / "wheels"
        req = self.cfg.root / "services" / "chat" / "requirements.txt"
        stamp = wheels / ".requirements.sha"
        want = hashlib.sha256(req.read_bytes()).hexdigest()
        if stamp.exists() and stamp.read_text() == want:
            return
        res = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:",
                              "--python-version", "3.11", "--platform", "manylinux2014_x86_64",
                              "-r", str(req), "-d", str(wheels)], capture_output=True, text=True,
                             timeout=600)
        if res.returncode != 0:
            raise LabError(f"pip download of the chat image's wheels failed: {res.stderr[-300:]}")
        stamp.write_text(want)

    @property
    def backend_log(self) -> Path:
        return self.run_dir / "backend-log.log"

    # ----------------------------------------------------------------- verbs
    def up(self, timeout_s: float = 180.0) -> dict[str, Any]:
        from lab.errors import Interrupted
        from lab.signals import deferred, interrupt_on

        self.run_dir.mkdir(parents=True, exist_ok=True)
        with interrupt_on(exc=Interrupted):  # SIGINT/SIGTERM during start-up: undo the half-start
            try:
                return self._up(timeout_s)
            except BaseException:
                with deferred():
                    self.down()
                raise

    def _up(self, timeout_s: float) -> dict[str, object]:
        reusable = self._reusable()
        if reusable is not None:
            return reusable
        if (self.run_dir / "stack.json").exists():
            self.down()  # a stack of older code or compose.yaml, or unhealthy: start afresh
        self._check_ports_free()
        host = self.engine.ensure()
        self._images = self._choose_images(host)
        self._compose(host, "up", "-d", "--build")
        self._wait_healthy(host, timeout_s)
        info = procs.read(self.run_dir, "backend-log")
        if info is None or not info.alive():
            self._follow_backend_log(host)
        state = {"mode": self.mode, "run_dir": str(self.run_dir), "docker_host": host,
                 "project": self.project, "endpoints": self.cfg.endpoints(),
                 "images": self._images or OFFICIAL, "code": self._fingerprint(), "reused": False}
        (self.run_dir / "stack.json").write_text(json.dumps(state, indent=2) + "\n")
        return state

    def _fingerprint(self) -> str:
        from lab.fingerprint import code_fingerprint

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

    def _follow_backend_log(self, host: str) -> None:
        """Follow the chat container's log into the run folder (lab.stack.events reads it),
        from the current run's start: `docker logs -f` ends when the container stops, so a
        backend restart starts a new follower, and --since keeps it from repeating old lines."""
        c = self._container("chat", host)
        procs.spawn("backend-log", [DOCKER, "logs", "-f", "--since",
                                    c.attrs["State"]["StartedAt"], c.id],
                    self.run_dir, env=self._env(host), cwd=self.cfg.root)

    def _check_ports_free(self) -> None:
        from lab.config import PORT_ENV
        from lab.errors import UsageError
        from lab.stack import ports

        for name, port in self.cfg.ports.items():
            if not ports.is_free(self.cfg.host, port):
                who = ports.holder(port)
                raise UsageError(
                    f"port {port} ({PORT_ENV[name]}) is in use" + (f" by {who}" if who else "")
                    + ": compose cannot publish it",
                    f"stop what holds it (a native stack? lab down), or {PORT_ENV[name]}=NNNNN")

    def _wait_healthy(self, host: str, timeout_s: float) -> None:
        ids = self._compose(host, "ps", "-q").stdout.split()

        def healthy() -> bool:
            res = self._docker(host, "inspect", "-f", "{{.Name}} {{.State.Health.Status}}", *ids)
            return all(line.endswith(" healthy") for line in res.stdout.strip().splitlines())
        wait_until(healthy, what="compose services healthy", timeout_s=timeout_s, interval_s=0.5,
                   hint="docker-compose logs shows why")
        cfg = self.cfg
        wait_until(lambda: redis.Redis.from_url(cfg.redis_proxy_url, socket_timeout=2).ping(),
                   what="redis through toxiproxy", timeout_s=30)
        wait_until(lambda: http_get(cfg.chat_url + "/healthz")[0] == 200,
                   what="chat through toxiproxy", timeout_s=30)

    # ----------------------------------------------------------------- container faults
    # The Stack verbs the process faults use (lab.stack.Stack), through the docker SDK; each
    # waits on what the engine reports (State.Paused, a new StartedAt), not on the call returning.
    def _host(self) -> str:
        try:
            return str(json.loads((self.run_dir / "stack.json").read_text())["docker_host"])
        except (OSError, ValueError, KeyError):
            raise LabError(f"no compose stack is up in {self.run_dir}",
                           "start it: lab up --mode compose") from None

    def _client(self, host: str | None = None) -> Any:
        if self._sdk is None:
            import docker

            self._sdk = docker.DockerClient(base_url=host or self._host(), version="auto", timeout=60)
        return self._sdk

    def _container(self, service: str, host: str | None = None) -> Any:
        """The compose project's container of a service, found by compose's labels."""
        name = SERVICE_OF.get(service)
        if name is None:
            raise UsageError(f"unknown service {service!r}", f"valid: {', '.join(SERVICE_OF)}")
        found = self._client(host).containers.list(all=True, filters={"label": [
            f"com.docker.compose.project={self.project}", f"com.docker.compose.service={name}"]})
        if len(found) != 1:
            raise LabError(f"{len(found)} {name} containers in compose project {self.project}, "
                           "expected 1", "restart the stack: lab down --mode compose; lab up --mode compose")
        return found[0]

    def _state(self, service: str) -> dict[str, Any]:
        c = self._container(service)
        c.reload()
        return dict(c.attrs["State"])

    @_engine_errors
    def instance(self, service: str) -> str:
        """What runs now: a restart keeps the container but gives it a new StartedAt."""
        c = self._container(service)
        return f"{service} container {c.short_id} started {c.attrs['State']['StartedAt']}"

    @_engine_errors
    def pause_redis(self) -> None:
        self._container("redis").pause()

    @_engine_errors
    def resume_redis(self) -> None:
        self._container("redis").unpause()
        wait_until(lambda: not self._state("redis")["Paused"], what="redis container unpaused",
                   timeout_s=10)

    @_engine_errors
    def redis_paused(self) -> str | None:
        """Evidence from the engine that the Redis container is frozen, None if it runs."""
        st = self._state("redis")
        if not st["Paused"]:
            return None
        return f"redis container {self._container('redis').short_id} State.Status={st['Status']} (frozen)"

    @_engine_errors
    def restart_redis(self, *, durable: bool, timeout_s: float = 30.0) -> str:
        """SIGKILL the Redis container (no shutdown save) and start the same container again:
        its writable layer (/data) survives, and its command reads the AOF flag written here."""
        c = self._container("redis")
        self._put_file(c, *APPENDONLY_FLAG, b"yes\n" if durable else b"no\n")
        c.kill()  # SIGKILL
        wait_until(lambda: not self._state("redis")["Running"], what="redis container killed",
                   timeout_s=timeout_s)
        c.start()
        self._wait_redis(timeout_s)
        return self.instance("redis")

    @_engine_errors
    def restart_backend(self, timeout_s: float = 30.0) -> str:
        """Stop the chat container (SIGTERM: gunicorn finishes in-flight requests; SIGKILL
        after 10 s) and start it again; its log follower is restarted with it."""
        c = self._container("chat")
        info = procs.read(self.run_dir, "backend-log")
        c.stop(timeout=10)
        wait_until(lambda: not self._state("chat")["Running"], what="chat container stopped",
                   timeout_s=timeout_s)
        if info is not None:
            procs.stop(info, self.run_dir)  # it exits with the container; reap it
        c.start()
        self._follow_backend_log(self._host())
        self._wait_backend(timeout_s)
        return self.instance("backend")

    def _wait_backend(self, timeout_s: float) -> None:
        cfg = self.cfg
        wait_until(lambda: http_get(cfg.backend_url + "/healthz")[0] == 200,
                   what="backend after restart", timeout_s=timeout_s)
        wait_until(lambda: http_get(cfg.chat_url + "/healthz")[0] == 200,
                   what="backend through toxiproxy after restart", timeout_s=timeout_s)

    # Compose only (lab.faults.redis_net_disconnect): the native stack has no container network.
    def _store_network(self) -> str:
        return f"{self.project}_store"

    @_engine_errors
    def redis_networks(self) -> list[str]:
        c = self._container("redis")
        c.reload()
        return sorted(c.attrs["NetworkSettings"]["Networks"])

    @_engine_errors
    def disconnect_redis(self) -> None:
        self._client().networks.get(self._store_network()).disconnect(self._container("redis"))

    @_engine_errors
    def reconnect_redis(self, timeout_s: float = 30.0) -> None:
        if self._store_network() not in self.redis_networks():
            # The service name is a DNS alias on the network: Toxiproxy dials "redis:6379".
            self._client().networks.get(self._store_network()).connect(
                self._container("redis"), aliases=["redis"])
        self._wait_redis(timeout_s)

    def close(self) -> None:
        """Release the docker SDK client (the stack keeps running)."""
        if self._sdk is not None:
            self._sdk.close()
            self._sdk = None

    @_engine_errors
    def heal(self) -> None:
        """After success, failure or Ctrl-C: Redis not left frozen, off its network or killed
        (a restart cut short), the backend not left stopped."""
        st = self._state("redis")
        if st["Paused"]:
            self.resume_redis()
        elif not st["Running"]:
            self._container("redis").start()
            self._wait_redis(30)
        if self._store_network() not in self.redis_networks():
            self.reconnect_redis()
        if not self._state("chat")["Running"]:
            self._container("chat").start()
            info = procs.read(self.run_dir, "backend-log")
            if info is not None:
                procs.stop(info, self.run_dir)
            self._follow_backend_log(self._host())
            self._wait_backend(30)

    def _wait_redis(self, timeout_s: float) -> None:
        def ping(url: str) -> bool:
            r = redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1, retry=None)
            try:
                return bool(r.ping())
            finally:
                r.close()
        cfg = self.cfg
        for what, url in (("redis", cfg.redis_url), ("redis through toxiproxy", cfg.redis_proxy_url)):
            wait_until(partial(ping, url), what=what, timeout_s=timeout_s)

    @staticmethod
    def _put_file(c: Any, folder: str, name: str, data: bytes) -> None:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        if not c.put_archive(folder, buf.getvalue()):
            raise LabError(f"could not write {folder}/{name} into the {c.name} container")

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
        stopped = self.engine.stop()
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
        return {"mode": self.mode, "up": up, "healthy": healthy, "run_dir": str(self.run_dir),
                "services": {s: {"pid": None, "alive": up} for s in SERVICES},
                "endpoints": self.cfg.endpoints(), **({"project": state.get("project")} if up else {})}
