"""The container faults (lab.stack.compose.containers) on an app's own services: the same
verbs under the app's service names, its own Redis configuration kept (no AOF switch), and
readiness judged from outside -- the backend's published port, the app's Redis at the lab's."""

from __future__ import annotations

from typing import Any

import redis

from lab.common.errors import LabError
from lab.common.http import http_get
from lab.common.wait import wait_until
from lab.stack.compose.containers import Containers
from lab.stack.compose.override import TOXIPROXY, AppCompose


class AppFaults(Containers):
    """Mixed into AppStack."""

    app: AppCompose
    engine: Any
    http_port: int
    _log_follower = "target"
    _own_store_network = False  # the app's networks are its own: Containers.heal leaves them

    def _service_of(self) -> dict[str, str]:
        a = self.app
        return {"redis": a.redis_service, "backend": a.service, "chat": a.service, "toxiproxy": TOXIPROXY}

    def _host(self) -> str:
        host = self.engine.find()
        if host is None:
            raise LabError("the Docker engine of the app's stack is gone", "run the investigation again")
        return str(host)

    def _follow_backend_log(self, host: str) -> None:
        self._follow_log(host)

    def _follow_log(self, host: str) -> None:
        raise NotImplementedError  # AppStack's

    def _wait_backend(self, timeout_s: float) -> None:
        url = f"http://127.0.0.1:{self.http_port}/"
        wait_until(lambda: http_get(url)[0] < 500, what="the backend after its restart", timeout_s=timeout_s)

    def _wait_redis(self, timeout_s: float) -> None:
        wait_until(lambda: pings(self.cfg.redis_url), what="the app's redis", timeout_s=timeout_s)

    def backend_running(self) -> bool:
        try:
            return bool(self._state("backend")["Running"])
        except LabError:
            return False

    def backend_pid(self) -> int:
        return int(self._state("backend")["Pid"])


def pings(url: str) -> bool:
    r = redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1, retry=None)
    try:
        return bool(r.ping())
    except redis.ResponseError:
        return True  # NOAUTH: a Redis with a password answered
    except (redis.RedisError, OSError):
        return False
    finally:
        r.close()
