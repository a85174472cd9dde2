"""`lab proxy up --redis HOST:PORT`: Toxiproxy alone, in front of a Redis the lab did not start
(the Redis of an app that already runs and that the lab cannot start). It prints the address to
give the app; `lab investigate` with `[start] external = true` then targets the running app,
with the faults that need no process control (Toxiproxy's: latency, drop, down, ...). The
processes of someone else's stack are not the lab's: pausing or restarting them is refused.

One proxy per run folder (`<run folder>-proxy`); `lab proxy down` stops it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import redis

from lab.common.config import PORT_ENV, LabConfig
from lab.common.errors import LabError, UsageError
from lab.common.http import http_get
from lab.common.wait import wait_until
from lab.stack import ports, procs, topology

NAME = "toxiproxy"


class RedisProxy:
    mode = "external"  # as the external stack: services the lab does not own, Toxiproxy's faults only
    keep = True  # `with proxy:` attaches to a proxy that runs; it never stops it

    def __init__(self, cfg: LabConfig) -> None:
        self.cfg = cfg
        self.run_dir = cfg.run_dir.with_name(cfg.run_dir.name + "-proxy")

    @property
    def backend_log(self) -> Path:
        return self.run_dir / "backend.log"  # no backend of the lab's: nothing is ever written here

    # ------------------------------------------------------------------ lab proxy up / down / status
    def up(self, upstream: str, timeout_s: float = 30.0) -> dict[str, Any]:
        host, _, port = upstream.rpartition(":")
        if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
            raise UsageError(f"--redis {upstream!r} is not HOST:PORT", "e.g. --redis 127.0.0.1:6379")
        if self.status()["up"]:
            raise UsageError(
                f"a lab proxy already runs (in front of {self.status()['upstream']})", "stop it first: lab proxy down"
            )
        try:  # the address first: a proxy in front of nothing would only fail later, less clearly
            redis.Redis(host=host, port=int(port), socket_timeout=3, socket_connect_timeout=3).ping()
        except (redis.ResponseError, redis.AuthenticationError):
            pass  # it answers (NOAUTH, or HELLO refused: a password the app has -- [redis] url_env)
        except (redis.RedisError, OSError) as exc:
            raise UsageError(
                f"--redis {upstream}: no Redis answers there ({type(exc).__name__}: {exc})",
                "give the address the app's Redis listens on (and start it first)",
            ) from None
        listen = self.cfg.ports["redis_proxy"]
        if not ports.is_free(self.cfg.host, listen):
            raise UsageError(
                f"port {listen} ({PORT_ENV['redis_proxy']}) is in use",
                f"choose another: {PORT_ENV['redis_proxy']}=NNNNN",
            )
        self.run_dir.mkdir(parents=True, exist_ok=True)
        config = self.run_dir / "toxiproxy.json"
        topology.write([topology.Proxy("redis", f"{self.cfg.host}:{listen}", upstream)], config)
        argv = [str(self.cfg.toxiproxy_server), "-host", self.cfg.host, "-port", str(self.cfg.ports["toxiproxy"])]
        info = procs.spawn(NAME, [*argv, "-config", str(config)], self.run_dir)
        try:
            wait_until(
                lambda: http_get(self.cfg.toxiproxy_url + "/version")[0] == 200,
                what="toxiproxy-server",
                timeout_s=timeout_s,
                abort=lambda: None if info.alive() else "toxiproxy-server exited",
            )
            wait_until(
                lambda: _answers(self.cfg.redis_proxy_url),
                what=f"Redis at {upstream} through the proxy",
                timeout_s=timeout_s,
                hint="is that Redis up, and reachable from here?",
            )
        except BaseException:
            procs.stop(info, self.run_dir)
            raise
        return self.status()

    def down(self) -> list[str]:
        return [f"{p.name} {procs.stop(p, self.run_dir)}" for p in procs.recorded(self.run_dir)]

    def status(self) -> dict[str, Any]:
        alive = [p for p in procs.recorded(self.run_dir) if p.alive()]
        upstream = None
        if alive:
            status, body = http_get(self.cfg.toxiproxy_url + "/proxies")
            upstream = json.loads(body).get("redis", {}).get("upstream") if status == 200 else None
        return {
            "up": bool(alive and upstream),
            "upstream": upstream,
            "give_the_app": self.cfg.redis_proxy_url,
            "toxiproxy": self.cfg.toxiproxy_url,
        }

    # ------------------------------------------------------------------ lab investigate, external
    def __enter__(self) -> "RedisProxy":
        if not self.status()["up"]:
            raise UsageError(
                "[start] external = true: no lab proxy runs in front of the app's Redis",
                "start it, and give the app the address it prints: lab proxy up --redis HOST:PORT",
            )
        return self

    def __exit__(self, *exc: object) -> None:
        from lab.stack.toxiproxy import Toxiproxy

        Toxiproxy(self.cfg.toxiproxy_url).reset()  # no toxic left behind; the proxy stays up

    @property
    def redis_url(self) -> str:
        """The app's Redis itself (the proxy's upstream), for the lab's direct reads of the key."""
        auth = self.cfg.redis_auth  # the app's login, where its spec gives one ([redis] url_env)
        return f"redis://{auth + '@' if auth else ''}{self.status()['upstream']}/{self.cfg.redis_db}"

    def _not_ours(self, *_: object, **__: object) -> str:
        raise LabError("the app's Redis and processes are not the lab's: this fault needs process control")

    instance = pause_redis = resume_redis = restart_redis = restart_backend = _not_ours

    def redis_paused(self) -> str | None:
        return None

    def heal(self) -> None:
        return None


def _answers(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url, socket_timeout=1, retry=None).ping())
    except (redis.ResponseError, redis.AuthenticationError):
        return True  # NOAUTH and the like: a Redis answered through the proxy
