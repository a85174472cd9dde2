"""The settle rule on a real Redis: a chain of writes one injected latency apart (an app that
stores a turn after it answered, one slow step at a time) is read as settled only once the chain
is over when the quiet window is sized by that latency -- and the fixed 50 ms window of an
unfaulted link would have taken a read in the middle of it for settled."""

from __future__ import annotations


import threading
import time
from collections.abc import Iterator

import pytest

from tests.helpers import run_async
import redis

from lab.common.wait import wait_until
from lab.investigate.evidence.keys import KeyReader, quiet_window_s
from lab.investigate.evidence.store import StoreMonitor
from lab.stack.native import NativeStack

STEP_MS = 150  # one step of the chain: what a 150 ms latency makes one round trip take


@pytest.fixture
def reader(lab_stack: NativeStack) -> Iterator[KeyReader]:
    k = KeyReader(lab_stack.cfg.redis_url)
    yield k
    k.close()


def _chain(r: "redis.Redis[bytes]", key: str, step_s: float, started: threading.Event, stop: threading.Event) -> None:
    """user row, reply row, EXPIRE: each step_s after the one before (waits on an Event with a
    timeout, so the test can stop it)."""
    r.rpush(key, b"user:q")
    started.set()
    for step in (lambda: r.rpush(key, b"bot:a"), lambda: r.expire(key, 3600)):
        if stop.wait(step_s):
            return
        step()


def _run(
    reader: KeyReader,
    r: "redis.Redis[bytes]",
    key: str,
    step_ms: float,
    chain_step_ms: float = STEP_MS,
    monitor: StoreMonitor | None = None,
) -> tuple[int, int, bool]:
    r.delete(key)
    r.rpush(key, b"old")
    r.expire(key, 600)
    started, stop = threading.Event(), threading.Event()
    th = threading.Thread(target=_chain, args=(r, key, chain_step_ms / 1000, started, stop))
    th.start()
    try:
        assert started.wait(5)
        obs = run_async(reader.settled_ttl(key, 1, step_delay_ms=step_ms, monitor=monitor))
    finally:
        stop.set()
        th.join(5)
    return obs.length, obs.pttl_ms, obs.settled


def test_quiet_window_sized_by_the_latency_waits_out_the_chain(
    reader: KeyReader, redis_direct: "redis.Redis[bytes]"
) -> None:
    length, pttl, settled = _run(reader, redis_direct, "chaoslab:test:settle", STEP_MS)
    assert settled and length == 3 and pttl > 600_000, (length, pttl, settled)


def test_a_fixed_short_window_takes_the_middle_of_the_chain_for_settled(
    reader: KeyReader, redis_direct: "redis.Redis[bytes]"
) -> None:
    """The old rule, for contrast: the key stayed the same for 50 ms (a tenth of one step), so a
    read with the reply not yet written passes for settled."""
    assert quiet_window_s(0) * 1000 * 10 <= 500
    length, pttl, settled = _run(reader, redis_direct, "chaoslab:test:settle0", 0, chain_step_ms=500)
    assert settled and length == 2 and pttl <= 600_000, (length, pttl, settled)


def test_quiet_window_is_several_round_trips_of_the_fault() -> None:
    assert quiet_window_s(0) == 0.05 and quiet_window_s(300) == pytest.approx(0.9)


def test_the_record_tells_the_same_rule_and_waits_out_the_chain(
    lab_stack: NativeStack, reader: KeyReader, redis_direct: "redis.Redis[bytes]"
) -> None:
    """With the store's record the quiet window runs from the app's last change of the key: the
    chain's later steps, one latency apart, still come inside it and the read waits for them."""
    with StoreMonitor(lab_stack.cfg.redis_url) as monitor:
        assert monitor.error is None, monitor.error
        length, pttl, settled = _run(reader, redis_direct, "chaoslab:test:settle-rec", STEP_MS, monitor=monitor)
    assert settled and length == 3 and pttl > 600_000, (length, pttl, settled)


def test_a_key_left_alone_for_the_window_is_settled_by_its_one_read(
    lab_stack: NativeStack, reader: KeyReader, redis_direct: "redis.Redis[bytes]", monkeypatch: pytest.MonkeyPatch
) -> None:
    """The answer came after the turn's last write, so the window since that write has often
    passed by the time the lab reads: the record says so, and the key is read once (polled, it is
    read for another window after the read)."""
    key = "chaoslab:test:settle-quiet"
    reads: list[str] = []
    snapshot = reader.snapshot
    monkeypatch.setattr(reader, "snapshot", lambda k: reads.append(k) or snapshot(k))
    with StoreMonitor(lab_stack.cfg.redis_url) as monitor:
        assert monitor.error is None, monitor.error
        redis_direct.delete(key)
        redis_direct.rpush(key, b"user:q", b"bot:a")
        redis_direct.expire(key, 600)
        assert reader.sync(monitor)

        def quiet() -> bool | None:
            said = monitor.last_change(key, time.time())
            return True if said and said[0] and time.time() - said[0] > quiet_window_s(0) else None

        wait_until(quiet, what="the key left alone for the quiet window", timeout_s=5, interval_s=0.01)
        obs = run_async(reader.settled_ttl(key, 1, monitor=monitor))
    assert obs.settled and obs.length == 2 and 0 < obs.pttl_ms <= 600_000, obs
    assert reads == [key], reads
    # Without the record: the polled rule reads it again through a window after the read.
    reads.clear()
    assert run_async(reader.settled_ttl(key, 1)).settled and len(reads) >= 2, reads
