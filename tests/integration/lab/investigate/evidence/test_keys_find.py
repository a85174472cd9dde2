"""A conversation's key found by what it holds ([redis] key with `*`), on a real Redis: the one
key of the template's shape holding the most of the trial's messages; none where no key holds
any, or where two hold as many (a key a message) -- the lab then reads no key rather than a
wrong one."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest
import redis

from lab.investigate.evidence.keys import KeyReader
from lab.stack.native import NativeStack


@pytest.fixture
def reader(lab_stack: NativeStack) -> Iterator[tuple[KeyReader, "redis.Redis[bytes]", str]]:
    tag = secrets.token_hex(3)  # the test's own keys, whatever else the session's Redis holds
    k, r = KeyReader(lab_stack.cfg.redis_url), redis.Redis.from_url(lab_stack.cfg.redis_url)
    yield k, r, tag
    for key in r.scan_iter(match=f"*{tag}*"):
        r.delete(key)
    k.close()
    r.close()


def test_the_key_holding_the_trials_messages_is_found(reader: tuple[KeyReader, "redis.Redis[bytes]", str]) -> None:
    k, r, tag = reader
    mine = [f"turn 1 {tag}", f"turn 2 {tag}"]
    r.rpush(f"c{tag}:3f2a9c0e", '{"role": "user", "content": "turn 1 ' + tag + '"}', "turn 2 " + tag)
    r.rpush(f"c{tag}:77aa0011", "another conversation")
    r.set(f"c{tag}:3f2a9c0e:meta", "turn 1 " + tag)  # a sibling, not of the shape
    r.hset(f"last{tag}:x1", "text", "turn 2 " + tag)  # another shape
    assert k.find(f"c{tag}:*", mine) == f"c{tag}:3f2a9c0e"
    assert k.find(f"c{tag}:*", ["never sent"]) is None


def test_two_keys_holding_as_many_are_no_answer(reader: tuple[KeyReader, "redis.Redis[bytes]", str]) -> None:
    k, r, tag = reader
    r.set(f"m{tag}:0b1c2d3e", "turn 1 " + tag)  # a key a message
    r.set(f"m{tag}:9a8b7c6d", "turn 2 " + tag)
    assert k.find(f"m{tag}:*", [f"turn 1 {tag}", f"turn 2 {tag}"]) is None
