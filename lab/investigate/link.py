"""Redis and Toxiproxy without the built-in backend: the half of the native stack a foreign
target is plugged into. The same NativeStack (processes, readiness checks, clean-up), with two
of its three services: the browser talks to the target directly, on the target's own origin."""

from __future__ import annotations

from lab.common.config import LabConfig
from lab.stack.native import NativeStack

LINK_SERVICES = ("redis", "toxiproxy")


def redis_link(cfg: LabConfig) -> NativeStack:
    """redis-server + toxiproxy-server with the "redis" proxy only (no backend, no chat proxy)."""
    return NativeStack(cfg, services=LINK_SERVICES)
