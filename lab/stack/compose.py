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
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import redis

from lab.config import LabConfig
from lab.errors import LabError
from lab.stack import procs
from lab.stack.engine import DOCKER, Engine
from lab.stack.native import http_get
from lab.wait import wait_until

OFFICIAL = {"redis": "redis:7.0.15", "toxiproxy": "ghcr.io/shopify/toxiproxy:2.12.0",
            "chat_base": "python:3.11-slim-bookworm"}
BASE_IMAGE = "chaoslab/base:bookworm"
TOXIPROXY_IMAGE = "chaoslab/toxiproxy:2.12.0"
BASE_PACKAGES = "redis-server,python3,python3-venv,ca-certificates"
SERVICES = ("redis", "toxiproxy", "chat")


class ComposeStack:
    mode = "compose"

    def __init__(self, cfg: LabConfig) -> None:
        self.cfg = cfg
        self.run_dir = cfg.run_dir.parent / "compose" if cfg.run_dir.name == "native" else cfg.run_dir
        self.cache = cfg.root / ".lab" / "cache"
        # LAB_DOCKER_ROOT: the private engine's data root (image cache); one engine per root.
        self.engine = Engine(self.run_dir, Path(os.environ.get("LAB_DOCKER_ROOT",
                                                               cfg.root / ".lab" / "docker")))
        # One compose project per run folder: test stacks never collide with a user's.
        self.project = "chaoslab" + hashlib.sha1(str(self.run_dir).encode()).hexdigest()[:6]

    # ----------------------------------------------------------------- helpers
    def _env(self, host: str) -> dict[str, str]:
        env = {**os.environ, "DOCKER_HOST": host, "COMPOSE_PROJECT_NAME": self.project}
        env.update({f"LAB_{k.upper()}_PORT": str(v) for k, v in self.cfg.ports.items()})
        env.update(getattr(self, "_images", {}))
        return env

    def _docker(self, host: str, *args: str, timeout: float = 300, check: bool = True,
                **kw: object) -> subprocess.CompletedProcess[str]:
        res = subprocess.run([DOCKER, *args], env=self._env(host), capture_output=True, text=True,
                             timeout=timeout, **kw)  # type: ignore[call-overload]
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
    def up(self, timeout_s: float = 180.0) -> dict[str, object]:
        from lab.stack.native import _signals_deferred, _signals_raise

        self.run_dir.mkdir(parents=True, exist_ok=True)
        with _signals_raise():  # SIGINT/SIGTERM during start-up: undo the half-start
            try:
                return self._up(timeout_s)
            except BaseException:
                with _signals_deferred():
                    self.down()
                raise

    def _up(self, timeout_s: float) -> dict[str, object]:
        self._check_ports_free()
        host = self.engine.ensure()
        self._images = self._choose_images(host)
        self._compose(host, "up", "-d", "--build")
        self._wait_healthy(host, timeout_s)
        if procs.read(self.run_dir, "backend-log") is None:
            # Follow the backend's log into the run folder (lab.stack.events reads it).
            procs.spawn("backend-log", [shutil.which("docker-compose") or "docker-compose",
                                        "-f", str(self.cfg.root / "compose.yaml"), "logs",
                                        "-f", "--no-color", "chat"],
                        self.run_dir, env=self._env(host), cwd=self.cfg.root)
        state = {"mode": self.mode, "run_dir": str(self.run_dir), "docker_host": host,
                 "project": self.project, "endpoints": self.cfg.endpoints(),
                 "images": self._images or OFFICIAL, "reused": False}
        (self.run_dir / "stack.json").write_text(json.dumps(state, indent=2) + "\n")
        return state

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
        stopped = self.engine.stop()
        if stopped:
            report.append(stopped)
        (self.run_dir / "stack.json").unlink(missing_ok=True)
        return report

    def status(self) -> dict[str, object]:
        try:
            state = json.loads((self.run_dir / "stack.json").read_text())
        except (OSError, ValueError):
            state = {}
        up = bool(state)
        return {"mode": self.mode, "up": up, "healthy": up and http_get(self.cfg.chat_url + "/healthz")[0] == 200
                if up else False, "run_dir": str(self.run_dir),
                "services": {s: {"pid": None, "alive": up} for s in SERVICES},
                "endpoints": self.cfg.endpoints(), **({"project": state.get("project")} if up else {})}
