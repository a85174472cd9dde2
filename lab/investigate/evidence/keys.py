"""The target's conversation key, read directly from the lab's Redis: PTTL, type and raw values.

The storage format is the app's business: the lab only counts values and searches them for
text. A read right after a send counts as evidence of a TTL rule only once the key has settled
(its contents unchanged and its TTL only decaying over a short window after the read): a write
still in flight makes the read unsettled, and an unsettled read is never such evidence.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Sequence
from itertools import islice
from typing import Any, TypeVar

import redis

from lab.common.wait import quiet_poll_s
from lab.investigate.evidence.store import StoreMonitor, fill, key_shape
from lab.investigate.spec.schema import RedisKey
from lab.model.history import Trial, TtlObs
from lab.model.store import carries

# The settle rule. A read counts once the key stayed as read (same values, its TTL only
# decaying) for a quiet window after it. The window must outlast one step of the app's slowest
# write chain: an app that stores a turn after it has answered writes the question's row, then
# the reply's, then its EXPIRE, one round trip apart -- under injected latency L, L apart. So the
# window is SETTLE_STEPS round trips of the fault (never under SETTLE_FLOOR_S), and the deadline
# leaves room for a chain of several steps before it.
SETTLE_FLOOR_S = 0.05
SETTLE_STEPS = 3
SETTLE_POLL_S = 0.025  # how often the key is read while waiting (a read is one direct round trip)
SETTLE_DEADLINE_FLOOR_S = 1.0
SETTLE_DEADLINE_STEPS = 10


def quiet_window_s(step_delay_ms: float) -> float:
    """How long the key must stay as read to count as settled, given what the fault adds to one
    of the app's Redis round trips (``Fault.step_delay_ms``)."""
    return max(SETTLE_FLOOR_S, SETTLE_STEPS * step_delay_ms / 1000)


def settle_deadline_s(step_delay_ms: float) -> float:
    return max(SETTLE_DEADLINE_FLOOR_S, quiet_window_s(step_delay_ms) + SETTLE_DEADLINE_STEPS * step_delay_ms / 1000)


T = TypeVar("T")
KeyFinder = Callable[[str, Sequence[str]], "str | None"]  # (the spec's key, texts) -> the key holding them
# A key found by what it holds (KeyReader.find) is looked for among this many keys of its shape:
# the lab's Redis holds the run's conversations only, a few hundred.
MOST_KEYS = 5000
CLIENT_NAME = "chaoslab-reader"  # lab.investigate.evidence.store.LAB_CLIENT_PREFIX


class KeyReader:
    def __init__(self, redis_url: str) -> None:
        self.redis_url = redis_url
        self._r: redis.Redis | None = None

    def _redis(self) -> redis.Redis:
        if self._r is None:
            # Named: the store's record (lab.investigate.evidence.store) tells the lab's reads from the app's.
            self._r = redis.Redis.from_url(self.redis_url, socket_timeout=5, retry=None, client_name=CLIENT_NAME)
        return self._r

    def _call(self, fn: Callable[[redis.Redis], T]) -> T:
        try:
            return fn(self._redis())
        except redis.RedisError:
            self.close()  # a restarted Redis (redis_restart) breaks the old connection: one new try
            return fn(self._redis())

    def sync(self, monitor: StoreMonitor) -> bool:
        """Until ``monitor`` has every command Redis ran before now (a mark on this connection)."""
        return monitor.sync(self._redis())

    def use_url(self, url: str) -> None:
        """Read through ``url`` from now on: the app's own db, found where it wrote
        (lab.investigate.evidence.key_home)."""
        self.close()
        self.redis_url = url

    def scan(self, most: int) -> list[str]:
        """Up to ``most`` of the db's key names."""
        return self._call(lambda r: [k.decode(errors="replace") for k in islice(r.scan_iter(count=500), most)])

    def close(self) -> None:
        if self._r is not None:
            self._r.close()
            self._r = None

    def read(self, key: str) -> tuple[int, str, list[bytes]]:
        """(PTTL, type, raw values) of ``key``."""

        def read(r: redis.Redis) -> tuple[int, str, list[bytes]]:
            pttl = int(r.pttl(key))
            kind = r.type(key)
            kind = kind.decode() if isinstance(kind, bytes) else str(kind)
            got: list[Any] = []
            if kind == "list":
                got = list(r.lrange(key, 0, -1))
            elif kind == "string":
                got = [r.get(key) or b""]
            elif kind == "hash":
                got = list(r.hvals(key))
            elif kind == "zset":
                got = list(r.zrange(key, 0, -1))
            elif kind == "set":
                got = sorted(r.smembers(key))
            elif kind == "stream":
                got = [repr(e) for e in r.xrange(key) or []]
            # The client answers bytes (no decode_responses): text is encoded alike for the search.
            return pttl, kind, [v if isinstance(v, bytes) else str(v).encode() for v in got]

        return self._call(read)

    def find(self, template: str, texts: Sequence[str]) -> str | None:
        """The conversation's key where its name holds no id the lab sees ([redis] key with `*`:
        an id inside a signed cookie, a hash of the session, a login's user id): the one key of
        the template's shape whose values hold the most of ``texts`` (the trial's own messages,
        which no other conversation holds). None: no key holds any, or two hold as many -- the
        conversation is not one key (a key a message), or is written twice, and no key is read."""
        shape = key_shape(template)
        glob = re.sub(r"([?\[\]\\])", r"\\\1", template)  # Redis's glob: `*` alone is a wildcard

        def find(r: redis.Redis) -> list[bytes]:
            return [k for k in islice(r.scan_iter(match=glob, count=500), MOST_KEYS) if shape.fullmatch(k)]

        held = {}
        for k in self._call(find):
            values = self.read(k.decode(errors="replace"))[2]
            held[k.decode(errors="replace")] = sum(any(carries(v, text) for v in values) for text in texts)
        best = max(held.values(), default=0)
        top = [k for k, n in held.items() if n == best]
        return top[0] if best > 0 and len(top) == 1 else None

    def exists(self, key: str) -> bool:
        return bool(self._call(lambda r: r.exists(key)))

    def snapshot(self, key: str) -> "Snapshot":
        """(midpoint time, round trip ms, PTTL, value count, content digest) of the key."""
        t0 = time.time()
        pttl, _kind, values = self.read(key)
        t1 = time.time()
        return (t0 + t1) / 2, (t1 - t0) * 1000, pttl, len(values), hash(tuple(values))

    async def settled_ttl(
        self, key: str, turn: int, step_delay_ms: float = 0.0, monitor: StoreMonitor | None = None
    ) -> TtlObs:
        """The key's PTTL once it has settled: unchanged (its TTL only decaying) for the quiet
        window (``settled=False`` if it never was by the deadline). With the store's record
        (``monitor``) the window runs from the app's last change of the key, which the record
        dates; without it, from the read, polled. The read returned is the first of the quiet
        stretch, with its own moment and round trip."""
        quiet_s = quiet_window_s(step_delay_ms)
        deadline = time.monotonic() + settle_deadline_s(step_delay_ms)
        if monitor is not None:
            got = await self._settled_by_record(key, turn, quiet_s, deadline, monitor)
            if got is not None:
                return got
        first = prev = self.snapshot(key)
        since = time.monotonic()
        while True:
            # Polled at short intervals, bounded by the deadline: the window is a measure of how
            # long the key stayed the same, not a guess at when the app is done.
            await asyncio.sleep(quiet_poll_s(SETTLE_POLL_S, since, quiet_s, time.monotonic()))
            cur = self.snapshot(key)
            if not _same(prev, cur):
                first, since = cur, time.monotonic()
            elif time.monotonic() - since >= quiet_s:
                return _obs(turn, first, settled=True)
            if time.monotonic() > deadline:
                return _obs(turn, first, settled=False)
            prev = cur

    async def _settled_by_record(
        self, key: str, turn: int, quiet_s: float, deadline: float, monitor: StoreMonitor
    ) -> TtlObs | None:
        """The same rule told by the store's record instead of watched: the key read, then settled
        once the app has left it unchanged for the quiet window since its last change -- often
        already so at the read (the answer came after the write), so nothing is waited. None
        where the record cannot say (the polled rule then decides)."""

        async def asked(read_at: float) -> tuple[float | None, bool] | None:
            """The record, once it holds every command before now, on the key since ``read_at``."""
            return monitor.last_change(key, read_at) if await asyncio.to_thread(self.sync, monitor) else None

        while True:
            t0 = time.time()
            snap = self.snapshot(key)
            if (said := await asked(t0)) is None:
                return None
            last, since = said
            if not since:
                # Unchanged from before the read to now: settled once the window since the last
                # change has passed -- waited out here, then the record asked again.
                wait_s = 0.0 if last is None else last + quiet_s - time.time()
                if wait_s <= 0:
                    return _obs(turn, snap, settled=True)
                if time.monotonic() + wait_s > deadline:
                    return _obs(turn, snap, settled=False)
                await asyncio.sleep(wait_s)
                if (said := await asked(t0)) is None:
                    return None
                if not said[1]:
                    return _obs(turn, snap, settled=True)
            if time.monotonic() > deadline:
                return _obs(turn, snap, settled=False)
            await asyncio.sleep(SETTLE_POLL_S)  # a change during or after the read: read again


Snapshot = tuple[float, float, int, int, int]


def _same(prev: Snapshot, cur: Snapshot) -> bool:
    """The same values, and a TTL that only decayed (to within the reads' round trips)."""
    tol_ms = 5 + (prev[1] + cur[1]) / 2
    return cur[3:] == prev[3:] and (
        cur[2] == prev[2] == -1
        or cur[2] == prev[2] == -2
        or (cur[2] >= 0 and prev[2] >= 0 and cur[2] <= prev[2] + tol_ms)
    )


def _obs(turn: int, snap: Snapshot, settled: bool) -> TtlObs:
    return TtlObs(turn, snap[0], snap[2], snap[3], round(snap[1], 2), settled=settled)


def key_record(
    key: str, pttl: int, kind: str, values: list[bytes], sends: list[Any], dump: bool = False
) -> dict[str, Any]:
    """The conversation's key after the history settled, as a trial records it: which turns'
    texts occur in its raw values (the storage format stays the app's business); ``dump``:
    the raw values too (the first 50, 500 bytes each)."""
    raw = b"\n".join(values)
    record = {
        "key": key,
        "type": kind,
        "pttl_ms": pttl,
        "values": len(values),
        "stored_turns": [s.turn for s in sends if carries(raw, s.text)],
    }
    if dump:
        record["dump"] = [v[:500].decode(errors="replace") for v in values[:50]]
    return record


def read_final(
    keys: KeyReader, t: Trial, key: str, store: StoreMonitor | None, since: float, redis: RedisKey, dump: bool = False
) -> tuple[int, list[bytes], float, float]:
    """The key once the history settled, into ``t`` (its record) -- and, where the run follows
    the store, the store's record of the trial since ``since`` (``redis``: the spec's key, for
    the reads of other keys of its shape, and whether conversations are meant to expire). The one final read of `lab investigate`'s trials and
    `pytest --lab-target`'s. Returns (PTTL, raw values, when the read began and ended)."""
    t0 = time.time()
    pttl, kind, values = keys.read(key)
    t1 = time.time()
    t.redis_final = key_record(key, pttl, kind, values, t.sends, dump=dump) | {"expires": redis.expires}
    if store is not None:
        keys.sync(store)  # every command before now is in the record
        fill(t, store, key, since, t1, redis.key)
        # Whether a key the app read and never wrote holds anything now: an empty key (another
        # identity's conversation, never begun) against one set up before the run (a config or a
        # greeting of the same shape). Asked once a key; a key the app wrote is no candidate.
        unwritten = [r for r in t.store_other_reads or [] if not r.get("written")]
        held = {k: keys.exists(k) for k in {r["key"] for r in unwritten}}
        for r in unwritten:
            r["held"] = held[r["key"]]
    return pttl, values, t0, t1


def key_for(template: str | None, sid: str | None, texts: Sequence[str], find: KeyFinder | None) -> str | None:
    """The conversation's key for session ``sid`` ([redis] key): {session} filled in, or, for the
    `*` form, the key ``find`` finds holding ``texts`` (the session's messages). None: unknown."""
    if not template or sid is None:
        return None
    if "{session}" in template:
        return template.replace("{session}", sid)
    return find(template, texts) if find is not None and texts else None
