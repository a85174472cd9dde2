"""What the lab's own Redis saw, followed in background threads: keys that expired (the
checker's evidence for "expired") and the commands on conversation keys (the report's Redis
lane). Both reconnect when Redis restarts (a fault), so they survive the run."""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections import defaultdict
from typing import Any

import redis

from lab.common.redis_follow import Follower, Monitor

MAX_COMMANDS_PER_SESSION = 400  # a long conversation's commands; beyond that the lane is cut
_SID = re.compile(rb"chat:([A-Za-z0-9_-]{8,64})")


MARK_CHANNEL = "chaoslab:expired-keys:mark"


class ExpiredKeys(Follower):
    """Keyspace "expired" events: key -> when it first expired (epoch seconds)."""

    name = "expired-keys"

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.at: dict[str, float] = {}
        self._marks: dict[str, threading.Event] = {}
        self._marks_lock = threading.Lock()

    @property
    def keys(self) -> set[str]:
        return set(self.at)

    def sync(self, timeout_s: float = 1.0) -> bool:
        """Until every "expired" event Redis published before this call has been received:
        a mark published now arrives after them (one Redis, one subscription, in order). So a
        key found gone (PTTL -2) is in ``keys`` right after this iff it expired."""
        token = uuid.uuid4().hex
        seen = threading.Event()
        with self._marks_lock:
            self._marks[token] = seen
        try:
            r = redis.Redis.from_url(self.url, socket_timeout=2, socket_connect_timeout=2)
            try:
                r.publish(MARK_CHANNEL, token)
            finally:
                r.close()
            return seen.wait(timeout_s)
        except redis.exceptions.RedisError:
            return False
        finally:
            with self._marks_lock:
                self._marks.pop(token, None)

    def _follow(self) -> None:
        r = redis.Redis.from_url(self.url, socket_timeout=5, socket_connect_timeout=2)
        ps = r.pubsub()
        try:
            ps.psubscribe("__keyevent@*__:expired", MARK_CHANNEL)
            self._ready.set()
            while not self._stop.is_set():
                m = ps.get_message(timeout=0.2)
                if not m or m["type"] != "pmessage":
                    continue
                if m["channel"] == MARK_CHANNEL.encode():
                    with self._marks_lock:
                        seen = self._marks.get(m["data"].decode())
                    if seen is not None:
                        seen.set()
                else:
                    self.at.setdefault(m["data"].decode(), time.time())  # the first expiry
        finally:
            ps.close()
            r.close()


class RedisCommands(Monitor):
    """MONITOR, kept only for conversation keys: session id -> [{t, lua, args}]."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.by_sid: dict[str, list[dict[str, Any]]] = defaultdict(list)

    def _wants(self, line: bytes) -> bool:
        return b"chat:" in line

    def _command(self, t: float, db: int, client: str, args: list[bytes]) -> None:
        m = next((m for a in args[1:] if (m := _SID.search(a))), None)
        if m is None:
            return
        rows = self.by_sid[m.group(1).decode()]
        if len(rows) >= MAX_COMMANDS_PER_SESSION:
            return
        shown = [a.decode("utf-8", "replace")[:120] for a in args]
        if shown and shown[0].upper() in ("EVAL", "EVALSHA") and len(shown) > 1:
            shown[1] = "<script>"  # the Lua source: its commands follow as [lua] lines
        rows.append({"t": t, "lua": client == "lua", "args": shown})
