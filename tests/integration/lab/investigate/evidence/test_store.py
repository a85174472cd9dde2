"""The store's record on the lab's real Redis: every command on a key, in order, with its
connection; the lab's own reads told apart by their name; logged in as an ACL user; a refusal
said, not waited on; one sync and nothing Redis ran before it is missing."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis

from lab.investigate.evidence.keys import KeyReader
from lab.investigate.evidence.store import StoreMonitor, record
from lab.model.history import Send
from lab.stack.native import NativeStack


def _url(base: str, user: str, password: str, db: int = 0) -> str:
    return base.replace("redis://", f"redis://{user}:{password}@", 1).rsplit("/", 1)[0] + f"/{db}"


@pytest.fixture
def users(redis_direct: "redis.Redis[bytes]") -> Iterator[tuple[str, str, str]]:
    """Two ACL users with a password (uuid: nothing else knows it): one may MONITOR, one not."""
    tag, pw = uuid.uuid4().hex[:8], uuid.uuid4().hex
    may, may_not = f"watch-{tag}", f"nowatch-{tag}"
    redis_direct.acl_setuser(may, enabled=True, passwords=[f"+{pw}"], keys=["*"], commands=["+@all"])
    redis_direct.acl_setuser(may_not, enabled=True, passwords=[f"+{pw}"], keys=["*"], commands=["+@all", "-monitor"])
    try:
        yield may, may_not, pw
    finally:
        redis_direct.acl_deluser(may, may_not)


def test_the_record_holds_the_apps_commands_in_order_and_leaves_out_the_labs_reads(
    lab_stack: NativeStack, redis_direct: "redis.Redis[bytes]", users: tuple[str, str, str]
) -> None:
    may, _, pw = users
    key, other = f"conv:{uuid.uuid4().hex}", f"conv:{uuid.uuid4().hex}"
    url = _url(lab_stack.cfg.redis_url, may, pw, db=3)
    app = redis.Redis.from_url(url, socket_timeout=5)
    reader = KeyReader(url)
    send = Send("m1", 'probe turn 1 "quoted" é', 1, reply="Sure!")
    try:
        with StoreMonitor(url) as store:
            assert store.error is None
            app.rpush(key, f"user:{send.text}")
            app.eval("return redis.call('RPUSH', KEYS[1], ARGV[1])", 1, key, "bot:Sure!")
            pipe = app.pipeline()
            pipe.rpush(other, "not this key").expire(key, 60).execute()
            redis.Redis.from_url(_url(lab_stack.cfg.redis_url, may, pw, db=0)).rpush(key, "db 0: not the app's db")
            reader.read(key)  # the lab's own read: named, left out
            assert reader.sync(store)  # everything before the mark is in, no fixed wait
            commands, why = store.on(key, 0, 1e12)
            assert why is None and commands is not None
            rows = record(commands, store.lab_clients, [send])
            # The other key got no text of a send; the conversation's key is not "elsewhere".
            assert store.elsewhere({1: send.text}, key, 0, 1e12) == []
            assert store.elsewhere({1: "not this key"}, key, 0, 1e12) == [{"turn": 1, "key": other}]
    finally:
        reader.close()
        app.delete(key, other)
        app.close()
    assert [(r["cmd"], r["conn"]) for r in rows] == [
        ("RPUSH", "c1"),
        ("EVAL", "c1"),
        ("RPUSH", "lua"),
        ("EXPIRE", "c1"),
    ], rows
    assert rows[0]["user"] == [1] and rows[0]["write"] and rows[0]["args"][1] == f"user:{send.text}"
    assert rows[1]["args"][0] == "<script>" and rows[1]["reply"] == [1] and rows[2]["reply"] == [1]
    assert rows[3]["write"] is False and rows[0]["t"] <= rows[1]["t"] <= rows[3]["t"]


def test_a_user_without_monitor_is_said_so_at_once(lab_stack: NativeStack, users: tuple[str, str, str]) -> None:
    _, may_not, pw = users
    with StoreMonitor(_url(lab_stack.cfg.redis_url, may_not, pw)) as store:
        assert store.error is not None and "NOPERM" in store.error, store.error
        commands, why = store.on("conv:x", 0, 1e12)
    assert commands is None and why is not None and "refused MONITOR" in why and pw not in why
