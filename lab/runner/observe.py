"""What the lab's own Redis saw, followed in background threads: keys that expired (the
checker's evidence for "expired") and the commands on conversation keys (the report's Redis
lane). Both reconnect when Redis restarts (a fault), so they survive the run."""

from __future__ import annotations

import re
import socket
import threading
import time
import uuid
from collections import defaultdict
from typing import Any, Self
from urllib.parse import urlparse

import redis

MAX_COMMANDS_PER_SESSION = 400  # a long conversation's commands; beyond that the lane is cut
_SID = re.compile(rb"chat:([A-Za-z0-9_-]{8,64})")
_ARG = re.compile(rb'"((?:[^"\\]|\\.)*)"')


class _Follower:
    """A daemon thread running ``_follow`` until stopped, reconnecting after errors."""

    name = "follower"

    def __init__(self, url: str) -> None:
        self.url = url
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._follow()
            except (redis.exceptions.RedisError, OSError):
                self._stop.wait(0.2)  # Redis restarting (a fault): try again shortly

    def _follow(self) -> None:
        raise NotImplementedError


MARK_CHANNEL = "chaoslab:expired-keys:mark"


class ExpiredKeys(_Follower):
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


class RedisCommands(_Follower):
    """MONITOR, kept only for conversation keys: session id -> [{t, client, args}].

    A raw socket rather than redis-py's Monitor: an idle MONITOR must be able to time out (to
    notice the stop) without the client dropping the connection and the commands after it."""

    name = "redis-monitor"

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.by_sid: dict[str, list[dict[str, Any]]] = defaultdict(list)

    def _follow(self) -> None:
        u = urlparse(self.url)
        with socket.create_connection((u.hostname or "127.0.0.1", u.port or 6379), timeout=2) as s:
            s.sendall(b"MONITOR\r\n")
            s.settimeout(0.2)
            buf = b""
            while not self._stop.is_set():
                try:
                    chunk = s.recv(65536)
                except TimeoutError:
                    continue
                if not chunk:
                    raise ConnectionError("MONITOR connection closed")
                buf += chunk
                *lines, buf = buf.split(b"\r\n")
                for line in lines:
                    if line == b"+OK":
                        self._ready.set()
                    elif line.startswith(b"+") and b"chat:" in line:
                        self._keep(line[1:])

    def _keep(self, line: bytes) -> None:
        # 1764421234.123456 [0 127.0.0.1:51234] "EVAL" "..." -- or [0 lua] inside a script
        m = _SID.search(line)
        head, _, rest = line.partition(b" [")
        client, _, argv = rest.partition(b"] ")
        if m is None:
            return
        rows = self.by_sid[m.group(1).decode()]
        if len(rows) >= MAX_COMMANDS_PER_SESSION:
            return
        try:
            t = float(head)
        except ValueError:
            return
        args = [a.decode("unicode_escape", "replace")[:120] for a in _ARG.findall(argv)]
        if args and args[0].upper() in ("EVAL", "EVALSHA"):
            args[1] = "<script>"  # the Lua source: its commands follow as [lua] lines
        rows.append({"t": t, "lua": client.endswith(b"lua"), "args": args})
