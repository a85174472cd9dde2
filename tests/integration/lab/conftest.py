"""Fixtures of the lab's integration tests on the session stack: Redis through its proxy, the fault
targets (reset around each test, and checked clean after it)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import redis

from lab.faults import Targets
from lab.stack.native import NativeStack


@pytest.fixture
def via_proxy(lab_stack: NativeStack) -> Iterator[Callable[..., "redis.Redis[bytes]"]]:
    """New Redis clients through the redis proxy (a new connection each: reset_peer only RSTs
    connections accepted after it was added). Closed after the test."""
    made: list[redis.Redis[bytes]] = []

    def make(timeout_s: float = 5.0) -> "redis.Redis[bytes]":
        r = redis.Redis.from_url(
            lab_stack.cfg.redis_proxy_url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s, retry=None
        )
        made.append(r)
        return r

    yield make
    for r in made:
        r.close()


@pytest.fixture
def targets(lab_targets: Targets) -> Iterator[Targets]:
    lab_targets.toxiproxy.reset()
    yield lab_targets
    assert all(not p["toxics"] and p["enabled"] for p in lab_targets.toxiproxy.proxies().values()), (
        "a fault was left behind"
    )
