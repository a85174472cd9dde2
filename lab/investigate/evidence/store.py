"""The store's record: every command Redis ran on a conversation's key, with its time and
connection, from Redis MONITOR on the Redis the target writes to (the lab's, or a compose or
external target's own with its password). The browser says when an answer came; this says
when each write reached Redis -- what no answer and no later read can tell.

A command is kept by its key (the first argument after the name; a script's keys; a script's
own commands come as ``lua`` lines). The lab's own reads (keys.KeyReader) name their connection
(CLIENT SETNAME chaoslab-...), which MONITOR shows: those connections are marked ``lab``.
A record whose trial overlaps a reconnection of MONITOR (Redis restarted) is not kept: a write
it missed could make a later rewrite look like a turn's first write.
"""

from __future__ import annotations

import hashlib
import re
import threading
import uuid
from collections import defaultdict
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

import redis

from lab.model.history import Send, Trial
from lab.common.redis_follow import Monitor
from lab.model.shape import shape
from lab.model.store import READ_ONLY, TAKES_OUT, carries, read_window

LAB_CLIENT_PREFIX = "chaoslab-"
MAX_KEYS = 20_000  # keys followed in one run, a db; beyond that new keys are not kept
MAX_COMMANDS_PER_KEY = 2_000
MAX_ARG_BYTES = 65_536  # a whole-document SET of a long conversation still fits
MARK = b"chaoslab-store-mark:"
# A trial's store_note where it has no record because no key is known to follow.
NO_KEY = "no conversation key known: the spec names no [redis] key, or none of its shape holds the trial's messages"
SHOWN_ARGS = 5  # per command in trials.json: the name, the key, and the first values, cut
SHOWN_ARG_CHARS = 80
# What writes a value (a removal names the value it removes: LREM is not a write of it).
WRITES = {
    "SET", "SETEX", "PSETEX", "SETNX", "GETSET", "SETRANGE", "APPEND", "MSET", "MSETNX",
    "RPUSH", "LPUSH", "RPUSHX", "LPUSHX", "LSET", "LINSERT", "LMOVE", "RPOPLPUSH",
    "HSET", "HMSET", "HSETNX", "SADD", "ZADD", "XADD", "RESTORE", "COPY", "RENAME",
    "JSON.SET", "JSON.ARRAPPEND", "JSON.ARRINSERT", "JSON.MSET",
    "EVAL", "EVALSHA", "EVAL_RO", "FCALL",
}  # fmt: skip


# What changes a key: a write of a value, or what takes values out (a removal among them).
CHANGES = frozenset(WRITES) | frozenset(TAKES_OUT)


@dataclass(frozen=True)
class Command:
    t: float  # epoch s, Redis's clock (the machine's: the lab's Redis runs here)
    client: str  # "127.0.0.1:51234", or "lua" inside a script
    args: tuple[bytes, ...]
    tx: bool = False  # inside its connection's MULTI ... EXEC: nothing else ran in between


class StoreMonitor(Monitor):
    """MONITOR for a run of `lab investigate`: key -> its commands, for the db of ``url`` (``db``:
    another, once the run finds the app writes there -- every db's commands are kept, so a record
    read after the change holds what came before it)."""

    name = "store-monitor"

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.db = int(urlparse(url).path.strip("/") or 0)  # MONITOR shows every db's commands
        self.lab_clients: set[str] = set()
        self._by_db: dict[int, dict[bytes, list[Command]]] = defaultdict(lambda: defaultdict(list))
        self._lock = threading.Lock()
        self._marks: dict[bytes, threading.Event] = {}
        self._in_multi: set[str] = set()  # connections between MULTI and EXEC / DISCARD

    def _command(self, t: float, db: int, client: str, args: list[bytes]) -> None:
        if len(args) >= 2 and args[0].upper() == b"ECHO" and args[1].startswith(MARK):
            seen = self._marks.get(args[1])
            if seen is not None:
                seen.set()
            return
        if len(args) >= 3 and args[0].upper() == b"CLIENT" and args[1].upper() == b"SETNAME":
            if args[2].decode(errors="replace").startswith(LAB_CLIENT_PREFIX):
                self.lab_clients.add(client)
            return
        name = args[0].upper() if args else b""
        if name == b"MULTI":
            self._in_multi.add(client)
        elif name in (b"EXEC", b"DISCARD"):
            self._in_multi.discard(client)
        if len(args) < 2:
            return
        cmd = Command(t, client, tuple(a[:MAX_ARG_BYTES] for a in args), tx=client in self._in_multi)
        with self._lock:
            by_key = self._by_db[db]
            for key in _keys(args):
                rows = by_key.get(key)
                # A bound a db: another db's keys (a busy cache beside the conversations) never
                # crowd out the app's -- a key not kept would read as one never written.
                if rows is None and len(by_key) >= MAX_KEYS:
                    continue
                rows = by_key[key]
                if len(rows) < MAX_COMMANDS_PER_KEY:
                    rows.append(cmd)

    @property
    def _by_key(self) -> dict[bytes, list[Command]]:
        """The commands of the db the app writes (``db``)."""
        return self._by_db[self.db]

    def _lost(self) -> None:
        super()._lost()
        self._in_multi.clear()  # a broken connection ends its transaction

    def sync(self, r: redis.Redis, timeout_s: float = 2.0) -> bool:
        """Until MONITOR has handed over every command Redis ran before this call: a mark sent
        now (an ECHO on ``r``) comes after them in MONITOR's order."""
        token = MARK + uuid.uuid4().hex.encode()
        seen = threading.Event()
        self._marks[token] = seen
        try:
            r.echo(token)
            return seen.wait(timeout_s)
        except redis.RedisError:
            return False
        finally:
            self._marks.pop(token, None)

    def on(self, key: str, since: float, until: float) -> tuple[list[Command] | None, str | None]:
        """The commands on ``key`` from ``since`` to ``until``, or (None, why not)."""
        if self.error is not None:
            return None, f"Redis refused MONITOR ({self.error}): judged by answers and probes only"
        if any(a < until and b > since for a, b in self.gaps):
            return None, "MONITOR reconnected during the trial (Redis restarted): the record has a gap"
        with self._lock:
            got = [c for c in self._by_key.get(key.encode(), []) if since <= c.t <= until]
        return got, None

    def last_change(self, key: str, until: float) -> tuple[float | None, bool] | None:
        """When the app last changed ``key`` (any command of its own that is not a read) before
        ``until``, and whether it changed it since; None when the record cannot say (MONITOR
        refused, or reconnected: a gap)."""
        if self.error is not None or self.gaps:
            return None
        with self._lock:
            rows = [c for c in self._by_key.get(key.encode(), []) if c.client not in self.lab_clients]
        t = [c.t for c in rows if c.args[0].decode(errors="replace").upper() not in READ_ONLY]
        before = [x for x in t if x < until]
        return (max(before) if before else None), any(x >= until for x in t)

    def elsewhere(self, texts: dict[int, str], key: str, since: float, until: float) -> list[dict[str, Any]]:
        """Which of the turns' texts (turn -> text) a write put under another key in the time
        window: [{turn, key}] -- a turn stored elsewhere is not a turn Redis never got."""
        out: list[dict[str, Any]] = []
        with self._lock:
            others = [(k, rows) for k, rows in self._by_key.items() if k != key.encode()]
        for k, rows in others:
            for c in rows:
                if since <= c.t <= until and c.args[0].decode(errors="replace").upper() in WRITES:
                    blob = b"\x00".join(c.args[1:])
                    out += [
                        {"turn": n, "key": k.decode(errors="replace")}
                        for n, text in texts.items()
                        if carries(blob, text)
                    ]
        return out

    def reads_elsewhere(self, key: str, shape: re.Pattern[bytes], since: float, until: float) -> list[dict[str, Any]]:
        """The app's reads, from ``since`` to ``until``, of keys other than ``key`` that have its
        shape (the spec's key pattern with another id): [{t, key, cmd, written}] -- ``written``:
        the app changed that key at some time of the run (an index or a counter of that shape,
        not an empty conversation). Whose they are (another trial's conversation, or none) is
        the diagnosis's to say: it sees every trial's key."""
        out: list[dict[str, Any]] = []
        with self._lock:
            others = [(k, rows) for k, rows in self._by_key.items() if k != key.encode() and shape.fullmatch(k)]
        for k, rows in others:
            app = [(c, c.args[0].decode(errors="replace").upper()) for c in rows if c.client not in self.lab_clients]
            written = any(name in CHANGES for _, name in app)
            out += [
                {"t": round(c.t, 6), "key": k.decode(errors="replace"), "cmd": name, "written": written}
                for c, name in app
                if since <= c.t <= until and name not in CHANGES
            ]
        return sorted(out, key=lambda r: r["t"])


def key_shape(template: str) -> re.Pattern[bytes]:
    """The spec's key pattern ("chat:{session}", or "chat:*:log" where the key is found by what
    it holds) as a match for any conversation's key."""
    parts = template.split("{session}") if "{session}" in template else template.split("*")
    # An id holds no separator: "chat:abc:meta" is a sibling of "chat:abc", not another conversation.
    return re.compile(rb"[^:/\s]+".join(re.escape(p.encode()) for p in parts))


# Commands that name a second key they change: the destination (RENAME tmp conv:1 swaps a list
# built aside into the conversation's key; LMOVE, COPY, SMOVE fill it).
TO_SECOND = (b"RENAME", b"RENAMENX", b"COPY", b"LMOVE", b"BLMOVE", b"RPOPLPUSH", b"BRPOPLPUSH", b"SMOVE")


def _keys(args: list[bytes]) -> list[bytes]:
    """The keys a command names: the first argument, a script's KEYS, MSET's every other, a
    move's or a rename's destination too."""
    name = args[0].upper()
    if name in TO_SECOND and len(args) >= 3:
        return [args[1], args[2]]
    if name in (b"EVAL", b"EVALSHA", b"EVAL_RO", b"FCALL") and len(args) >= 3:
        try:
            n = int(args[2])
        except ValueError:
            return []
        return list(args[3 : 3 + n])
    if name in (b"MSET", b"MSETNX", b"DEL", b"UNLINK", b"EXISTS"):
        return list(args[1::2] if name.startswith(b"MSET") else args[1:])
    return [args[1]]


def record(
    commands: list[Command], lab_clients: set[str], sends: list[Send], calls: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """The trial's commands as trials.json keeps them, the lab's own reads left out: time,
    connection (numbered in order of appearance; "lua" inside a script), the command cut
    short, whether it writes, and which turns' texts it carries -- the user's (unique per
    send) and the reply's (a reply repeated across turns names each: lab.model.store places
    it by time) -- and, for the stand-in model's replies it carries, the shape of the record
    holding each (lab.model.shape: [call index, shape])."""
    replies = [(i, str(c["reply"])) for i, c in enumerate(calls or []) if c.get("reply")]
    conns: dict[str, str] = {}
    out = []
    for c in sorted(commands, key=lambda c: c.t):
        if c.client in lab_clients:
            continue
        who = "lua" if c.client == "lua" else conns.setdefault(c.client, f"c{len(conns) + 1}")
        name = c.args[0].decode(errors="replace").upper()
        blob = b"\x00".join(c.args[1:])
        row: dict[str, Any] = {
            "t": round(c.t, 6),
            "conn": who,
            "cmd": name,
            "args": [a.decode(errors="replace")[:SHOWN_ARG_CHARS] for a in c.args[1:SHOWN_ARGS]],
            "write": name in WRITES,
            "value": hashlib.blake2b(blob, digest_size=6).hexdigest(),  # the same value written twice
            "atomic": c.tx or who == "lua",  # in a MULTI or a script: nothing ran in between
            "user": sorted({s.turn for s in sends if carries(blob, s.text)}),
            "ids": sorted({s.id for s in sends if carries(blob, s.text)}),  # two tabs share a turn
            "reply": sorted({s.turn for s in sends if s.reply and len(s.reply) >= 2 and carries(blob, s.reply)}),
        }
        if name in ("EVAL", "EVALSHA") and row["args"]:
            row["args"][0] = "<script>"  # its commands follow as lua lines
        if row["write"] and replies and len(c.args) > 2:
            texts = [r for _, r in replies]
            found = [[i, sh] for i, r in replies if (sh := shape(name, c.args[2:], r, texts)) is not None]
            if found:
                row["shapes"] = found
        out.append(row)
    return out


def fill(t: Trial, monitor: StoreMonitor, key: str, since: float, until: float, template: str | None = None) -> None:
    """The trial's store record: the app's commands on its key, the turns it wrote under
    another key, and -- with the spec's key ``template`` -- the keys of that shape it read while
    the page's read after the refresh was made (or store_note: why there is no record)."""
    commands, t.store_note = monitor.on(key, since, until)
    if commands is None:
        return
    t.store = record(commands, monitor.lab_clients, t.sends, t.model_calls)
    written = {n for c in t.store if c["write"] for n in c["user"]}
    unwritten = {s.turn: s.text for s in t.sends if s.turn not in written}
    t.store_elsewhere = monitor.elsewhere(unwritten, key, since, until) if unwritten else []
    window = read_window(t, until)
    if template is not None and window is not None:
        t.store_other_reads = monitor.reads_elsewhere(key, key_shape(template), *window)
