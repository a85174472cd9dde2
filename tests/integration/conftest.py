from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from lab.stack.native import NativeStack
from lab.toxiproxy import Toxiproxy


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.integration)


@pytest.fixture
def toxi(lab_stack: NativeStack) -> Iterator[Toxiproxy]:
    """The session stack's Toxiproxy, reset (all proxies enabled, no toxics) around each test."""
    t = Toxiproxy(lab_stack.cfg.toxiproxy_url)
    t.reset()
    yield t
    t.reset()


@pytest.fixture
def redis_direct(lab_stack: NativeStack) -> Iterator["redis.Redis[bytes]"]:
    """Redis itself, bypassing Toxiproxy (the checker's view of the truth)."""
    r = redis.Redis.from_url(lab_stack.cfg.redis_url, socket_timeout=5)
    yield r
    r.close()
