"""ExpiredKeys.sync on the lab's real Redis: once a key is found gone, one sync says whether it
expired (the event is in) or was deleted (no event) -- no fixed wait."""

from __future__ import annotations

import uuid

import redis

from lab.runner.observe import ExpiredKeys
from lab.stack.native import NativeStack
from lab.common.wait import wait_until


def test_a_gone_key_is_known_expired_or_not_after_one_sync(
    lab_stack: NativeStack, redis_direct: "redis.Redis[bytes]"
) -> None:
    expiring, deleted = f"chat:obs-{uuid.uuid4().hex}", f"chat:obs-{uuid.uuid4().hex}"
    with ExpiredKeys(lab_stack.cfg.redis_url) as seen:
        redis_direct.set(expiring, b"x", px=30)
        redis_direct.set(deleted, b"x", px=600_000)
        redis_direct.delete(deleted)
        # Gone: PTTL -2 (Redis expires it on access at the latest).
        wait_until(lambda: redis_direct.pttl(expiring) == -2, what="the key expired", timeout_s=10)
        assert seen.sync(5.0)
        assert expiring in seen.keys and deleted not in seen.keys
