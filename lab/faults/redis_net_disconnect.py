"""redis_net_disconnect: takes the Redis container off its network (`docker network
disconnect`) until removed: Toxiproxy can no longer resolve or reach it, as in a partition.
Compose only -- the native stack has no container network to cut."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lab.faults.base import Fault, FaultNotConfirmed, Targets, register


@register("redis_net_disconnect")
@dataclass
class RedisNetDisconnect(Fault):
    summary = "disconnect the Redis container from its network until removed"
    window = "send"
    modes = ("compose",)
    instead = "blackhole (swallows the Redis link's data) or down (the redis proxy refuses connections)"

    def apply(self, t: Targets) -> None:
        self._cut = True  # set first: a half-applied cut is still undone by remove
        self._stack(t).disconnect_redis()

    def remove(self, t: Targets) -> None:
        if getattr(self, "_cut", False):
            self._stack(t).reconnect_redis()
            self._cut = False

    def confirm(self, t: Targets) -> str:
        left = self._stack(t).redis_networks()
        if left:
            raise FaultNotConfirmed(f"the Redis container is still on {', '.join(left)}")
        return "the engine lists the Redis container on no network"

    @staticmethod
    def _stack(t: Targets) -> Any:
        return t.stack  # a ComposeStack: check_mode refused any other before apply
