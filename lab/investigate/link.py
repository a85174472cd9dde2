"""Redis and Toxiproxy without the built-in backend: the half of the native stack a foreign
target is plugged into. Same processes, readiness checks and clean-up as NativeStack."""

from __future__ import annotations

import shutil

from lab import topology
from lab.errors import UsageError
from lab.stack.native import NativeStack


class RedisLink(NativeStack):
    """redis-server + toxiproxy-server with the "redis" proxy only (no backend, no chat proxy:
    the browser talks to the target directly, on the target's own origin)."""

    services = ("redis", "toxiproxy")

    def _preflight(self) -> None:
        if not self.cfg.toxiproxy_server.is_file():
            raise UsageError(f"no Toxiproxy server at {self.cfg.toxiproxy_server}",
                             "run `make setup` (builds it with go install)")
        if shutil.which("redis-server") is None:
            raise UsageError("redis-server is not installed",
                             "run `make setup` as root, or: apt-get install -y redis-server")

    def _check_ports_free(self) -> None:
        saved = dict(self.cfg.ports)
        # Only the ports this half uses must be free (the backend and chat proxy ports are not).
        for name in ("backend", "chat_proxy"):
            self.cfg.ports.pop(name, None)
        try:
            super()._check_ports_free()
        finally:
            self.cfg.ports.clear()
            self.cfg.ports.update(saved)

    def _start(self, proxies: list[topology.Proxy], timeout_s: float) -> None:
        super()._start([p for p in proxies if p.name == "redis"], timeout_s)

    def _healthy(self) -> bool:
        try:
            return bool(self._redis(self.cfg.redis_proxy_url).ping())
        except Exception:
            return False
