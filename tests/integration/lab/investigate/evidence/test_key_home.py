"""Where a message is, on a real Redis: every key of every db holding keys whose values carry
its text (an app chooses its db itself), and nothing for a text no key holds."""

from __future__ import annotations

import secrets

import pytest
import redis

from lab.investigate.evidence.key_home import Holder, holders, with_db
from lab.stack.native import NativeStack


def test_the_keys_carrying_a_text_are_found_in_every_db(lab_stack: NativeStack) -> None:
    tag = secrets.token_hex(3)
    url = lab_stack.cfg.redis_url
    r0, r5 = redis.Redis.from_url(with_db(url, 0)), redis.Redis.from_url(with_db(url, 5))
    try:
        r5.rpush(f"conv{tag}:1", '{"role": "user", "content": "hello ' + tag + '"}')
        r0.hset(f"meta{tag}", "last", "hello " + tag)
        r0.set(f"other{tag}", "unrelated")
        found = holders(url, "hello " + tag)
        assert sorted(found, key=lambda h: h.db) == [Holder(0, f"meta{tag}"), Holder(5, f"conv{tag}:1")]
        assert holders(url, "never written " + tag) == []
    finally:
        r0.delete(f"meta{tag}", f"other{tag}")
        r5.delete(f"conv{tag}:1")
        r0.close()
        r5.close()


def test_a_login_refused_info_searches_its_own_db(lab_stack: NativeStack) -> None:
    """An app's own Redis may refuse INFO to the app's user (an ACL): the search keeps to the
    URL's db instead of failing the contract check."""
    tag = secrets.token_hex(3)
    url = lab_stack.cfg.redis_url
    admin = redis.Redis.from_url(url)
    user, password = f"limited{tag}", secrets.token_hex(8)
    admin.execute_command("ACL", "SETUSER", user, "on", f">{password}", "~*", "+@all", "-info")
    limited = with_db(url.replace("redis://", f"redis://{user}:{password}@"), 0)
    try:
        admin.rpush(f"conv{tag}:1", "hi " + tag)
        refused = redis.Redis.from_url(limited)
        try:
            with pytest.raises(redis.exceptions.NoPermissionError):  # the ACL took
                refused.info("keyspace")
        finally:
            refused.close()
        assert holders(limited, "hi " + tag) == [Holder(0, f"conv{tag}:1")]
    finally:
        admin.delete(f"conv{tag}:1")
        admin.execute_command("ACL", "DELUSER", user)
        admin.close()
