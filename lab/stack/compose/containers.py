"""Container faults on the compose stack, through the docker SDK: the Stack verbs the process
faults use (lab.stack.Stack). Each waits on what the engine reports (State.Paused, a new
StartedAt), not on the call returning."""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Callable
from functools import partial, wraps
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import redis

from lab.common.errors import LabError, UsageError
from lab.common.http import http_get
from lab.stack import procs
from lab.stack.native_faults import serve_writes
from lab.stack.compose.docker_cli import DockerCli
from lab.stack.engine import DOCKER
from lab.common.wait import wait_until

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
            raise LabError(
                f"{fn.__name__}: the Docker engine refused: {exc}", "is the compose stack up? lab status --mode compose"
            ) from None

    return wrapper


class Containers(DockerCli):
    """Mixed into ComposeStack (and, with its own names, the app stack: lab.stack.compose.app)."""

    run_dir: Path
    _sdk: Any
    _log_follower = "backend-log"  # the process following the backend's log (procs name)
    _own_store_network = True  # compose.yaml's "store" network, which redis_net_disconnect cuts

    def _follow_backend_log(self, host: str) -> None:
        """Follow the chat container's log into the run folder (lab.stack.events reads it),
        from the current run's start: `docker logs -f` ends when the container stops, so a
        backend restart starts a new follower, and --since keeps it from repeating old lines."""
        c = self._container("chat", host)
        procs.spawn(
            "backend-log",
            [DOCKER, "logs", "-f", "--since", c.attrs["State"]["StartedAt"], c.id],
            self.run_dir,
            env=self._env(host),
            cwd=self.cfg.root,
        )

    # ----------------------------------------------------------------- container faults
    # The Stack verbs the process faults use (lab.stack.Stack), through the docker SDK; each
    # waits on what the engine reports (State.Paused, a new StartedAt), not on the call returning.
    def _host(self) -> str:
        try:
            return str(json.loads((self.run_dir / "stack.json").read_text())["docker_host"])
        except (OSError, ValueError, KeyError):
            raise LabError(f"no compose stack is up in {self.run_dir}", "start it: lab up --mode compose") from None

    def _client(self, host: str | None = None) -> Any:
        if self._sdk is None:
            import docker

            self._sdk = docker.DockerClient(base_url=host or self._host(), version="auto", timeout=60)
        return self._sdk

    def _service_of(self) -> dict[str, str]:
        """The lab's service names -> this project's compose services."""
        return SERVICE_OF

    def _container(self, service: str, host: str | None = None) -> Any:
        """The compose project's container of a service, found by compose's labels."""
        name = self._service_of().get(service)
        if name is None:
            raise UsageError(f"unknown service {service!r}", f"valid: {', '.join(self._service_of())}")
        found = self._client(host).containers.list(
            all=True,
            filters={"label": [f"com.docker.compose.project={self.project}", f"com.docker.compose.service={name}"]},
        )
        if len(found) != 1:
            raise LabError(
                f"{len(found)} {name} containers in compose project {self.project}, expected 1",
                "restart the stack: lab down --mode compose; lab up --mode compose",
            )
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
        wait_until(lambda: not self._state("redis")["Paused"], what="redis container unpaused", timeout_s=10)

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
        if not getattr(self, "redis_as_configured", False):  # an app's own Redis keeps its own config
            self._put_file(c, *APPENDONLY_FLAG, b"yes\n" if durable else b"no\n")
        c.kill()  # SIGKILL
        wait_until(lambda: not self._state("redis")["Running"], what="redis container killed", timeout_s=timeout_s)
        c.start()
        self._wait_redis(timeout_s)
        return self.instance("redis")

    @_engine_errors
    def restart_backend(self, timeout_s: float = 30.0) -> str:
        """Stop the chat container (SIGTERM: gunicorn finishes in-flight requests; SIGKILL
        after 10 s) and start it again; its log follower is restarted with it."""
        c = self._container("backend")
        info = procs.read(self.run_dir, self._log_follower)
        c.stop(timeout=10)
        wait_until(lambda: not self._state("backend")["Running"], what="backend container stopped", timeout_s=timeout_s)
        if info is not None:
            procs.stop(info, self.run_dir)  # it exits with the container; reap it
        c.start()
        self._follow_backend_log(self._host())
        self._wait_backend(timeout_s)
        return self.instance("backend")

    def _wait_backend(self, timeout_s: float) -> None:
        cfg = self.cfg
        wait_until(
            lambda: http_get(cfg.backend_url + "/healthz")[0] == 200, what="backend after restart", timeout_s=timeout_s
        )
        wait_until(
            lambda: http_get(cfg.chat_url + "/healthz")[0] == 200,
            what="backend through toxiproxy after restart",
            timeout_s=timeout_s,
        )

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
            self._client().networks.get(self._store_network()).connect(self._container("redis"), aliases=["redis"])
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
        if self._own_store_network and self._store_network() not in self.redis_networks():
            self.reconnect_redis()
        serve_writes(self.cfg.redis_url)
        if not self._state("backend")["Running"]:
            self._container("backend").start()
            info = procs.read(self.run_dir, self._log_follower)
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
