"""ExpiredKeys.sync on the lab's real Redis: once a key is found gone, one sync says whether it
expired (the event is in) or was deleted (no event) -- no fixed wait."""

from __future__ import annotations

import uuid

import redis

from lab.driver.observe import ExpiredKeys, RedisCommands
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


def test_the_commands_on_a_conversation_are_kept_by_its_session(
    lab_stack: NativeStack, redis_direct: "redis.Redis[bytes]"
) -> None:
    """The report's Redis lane: MONITOR's commands on chat:<sid>, a script's as lua lines."""
    sid = uuid.uuid4().hex
    with RedisCommands(lab_stack.cfg.redis_url) as seen:
        redis_direct.rpush(f"chat:{sid}", b"one")
        redis_direct.eval("return redis.call('EXPIRE', KEYS[1], 60)", 1, f"chat:{sid}")
        redis_direct.rpush(f"chat:other-{sid}", b"not this session")
        wait_until(lambda: len(seen.by_sid.get(sid, [])) >= 3, what="three commands seen", timeout_s=10)
    rows = seen.by_sid[sid]
    assert [(r["args"][0], r["lua"]) for r in rows] == [("RPUSH", False), ("EVAL", False), ("EXPIRE", True)], rows
    assert rows[1]["args"][1] == "<script>" and rows[0]["t"] <= rows[2]["t"]
    redis_direct.delete(f"chat:{sid}", f"chat:other-{sid}")
