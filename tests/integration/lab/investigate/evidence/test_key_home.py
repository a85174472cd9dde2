"""Where a message is, on a real Redis: every key of every db holding keys whose values carry
its text (an app chooses its db itself), and nothing for a text no key holds."""

from __future__ import annotations

import secrets

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
