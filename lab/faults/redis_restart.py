"""redis_restart: kills Redis with SIGKILL and starts it again on the same port -- the process
natively, `docker kill` + `docker start` of the same container on compose.

Persistence off (the stack's default, ``--save ''``) loses everything; ``durable`` first turns
on AOF with fsync on every write (the current data rewritten into it) and restarts Redis with
AOF on, so nothing is lost.
"""

from __future__ import annotations

from dataclasses import dataclass

import redis

from lab.faults.base import Fault, FaultNotConfirmed, Targets, register
from lab.common.wait import wait_until


@register("redis_restart")
@dataclass
class RedisRestart(Fault):
    modes = ("native", "compose")  # the external mode owns no process to pause or restart
    summary = "SIGKILL + start Redis (process / container); durable=true keeps data (AOF, appendfsync always)"
    window = "send"  # applied just before one send
    earliest_turn = 2  # a restart before any write loses nothing: it would exercise nothing
    durable: bool = False

    def apply(self, t: Targets) -> None:
        try:
            self._apply(t)
        except redis.RedisError as exc:  # a LabError: the cell is unexercised, the run goes on
            raise FaultNotConfirmed(
                f"redis_restart: redis-server unreachable before the restart: {exc}",
                f"see {t.stack.run_dir / 'redis.log'}",
            ) from exc

    def _apply(self, t: Targets) -> None:
        r = redis.Redis.from_url(t.stack.cfg.redis_url, socket_timeout=10)
        try:
            self._run_id = r.info("server")["run_id"]
            self._before = t.stack.instance("redis")
            if _as_configured(t):
                pass  # an app's own Redis (a compose target) keeps its owner's persistence: that is tested
            elif self.durable:
                r.config_set("appendfsync", "always")
                r.config_set("appendonly", "yes")  # rewrites the current data into the AOF
                wait_until(
                    lambda: (
                        lambda i: (
                            i["aof_enabled"] == 1
                            and i["aof_rewrite_in_progress"] == 0
                            and i["aof_rewrite_scheduled"] == 0
                        )
                    )(r.info("persistence")),
                    what="AOF rewrite finished",
                    timeout_s=30,
                )
        finally:
            r.close()
        t.stack.restart_redis(durable=self.durable)

    def remove(self, t: Targets) -> None:
        pass  # the restart is the whole fault; the new Redis stays

    def confirm(self, t: Targets) -> str:
        r = redis.Redis.from_url(t.stack.cfg.redis_url, socket_timeout=10)
        try:
            info = r.info("server")
            aof = r.info("persistence")["aof_enabled"]
        finally:
            r.close()
        now = t.stack.instance("redis")
        if info["run_id"] == getattr(self, "_run_id", None) or now == getattr(self, "_before", None):
            raise FaultNotConfirmed(f"Redis has the same run_id / {now}: it was not restarted")
        if _as_configured(t):
            return f"the app's Redis restarted: {self._before} -> {now} (its own persistence: aof_enabled={aof})"
        if aof != int(self.durable):
            # The durable variant is only exercised if the new server really reloaded with AOF.
            raise FaultNotConfirmed(f"restarted Redis has aof_enabled={aof}, expected {int(self.durable)}")
        return f"Redis restarted: {self._before} -> {now} (run_id {str(info['run_id'])[:8]}, aof_enabled={aof})"


def _as_configured(t: Targets) -> bool:
    return bool(getattr(t.stack, "redis_as_configured", False))
