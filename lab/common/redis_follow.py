"""Followers of a Redis, each a daemon thread that reconnects after errors (a restarted Redis
is a fault the lab injects): the base, and MONITOR on a raw socket with its line parser."""

from __future__ import annotations

import codecs
import re
import socket
import threading
import time
from typing import Self
from urllib.parse import urlparse

import redis

_ARG = re.compile(rb'"((?:[^"\\]|\\.)*)"')


class Follower:
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
                self._lost()
                self._stop.wait(0.2)  # Redis restarting (a fault): try again shortly

    def _follow(self) -> None:
        raise NotImplementedError

    def _lost(self) -> None:
        """The connection broke (it is tried again)."""


def _resp(*args: str) -> bytes:
    out = b"*%d\r\n" % len(args)
    for a in args:
        b = a.encode()
        out += b"$%d\r\n%s\r\n" % (len(b), b)
    return out


def parse_monitor_line(line: bytes) -> tuple[float, int, str, list[bytes]] | None:
    """One MONITOR line -- ``1764421234.123456 [0 127.0.0.1:51234] "RPUSH" "k" "v"`` (or
    ``[0 lua]`` inside a script) -- as (epoch s, db, client, raw args); None if it is not one."""
    head, _, rest = line.partition(b" [")
    where, _, argv = rest.partition(b"] ")
    db, _, client = where.partition(b" ")
    try:
        return float(head), int(db), client.decode(), [_unescape(a) for a in _ARG.findall(argv)]
    except ValueError:
        return None


def _unescape(arg: bytes) -> bytes:
    # MONITOR quotes like sdscatrepr: \" \\ \n \r \t \a \b and \xNN; the rest is verbatim.
    return bytes(codecs.escape_decode(arg)[0])


class Monitor(Follower):
    """Redis MONITOR on a raw socket, logged in as the URL says (user and password), each
    command handed to ``_command``. A raw socket rather than redis-py's Monitor: an idle
    MONITOR must be able to time out (to notice the stop) without the client dropping the
    connection and the commands after it. A refusal (a wrong password, an ACL without MONITOR)
    ends the follower with ``error`` set: the caller says so and does without."""

    name = "redis-monitor"

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.error: str | None = None
        # Reconnections leave windows in which commands went unseen: (from, to), epoch s.
        self.gaps: list[tuple[float, float]] = []
        self._down_since: float | None = None

    def _run(self) -> None:
        super()._run()
        self._ready.set()  # refused: nobody waits for a MONITOR that will never be up

    def _follow(self) -> None:
        u = urlparse(self.url)
        login = [u.username or "default", u.password] if u.password else []
        with socket.create_connection((u.hostname or "127.0.0.1", u.port or 6379), timeout=2) as s:
            s.sendall((_resp("AUTH", *login) if login else b"") + _resp("MONITOR"))
            s.settimeout(0.2)
            buf, oks = b"", 0
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
                    if line.startswith(b"-"):
                        self.error = line[1:].decode(errors="replace")[:200]
                        self._stop.set()  # refused: retrying would be refused again
                        return
                    if line == b"+OK" and oks < 1 + bool(login):
                        oks += 1
                        if oks == 1 + bool(login):
                            self._up()
                    elif line.startswith(b"+") and self._wants(line):
                        got = parse_monitor_line(line[1:])
                        if got is not None:
                            self._command(*got)

    def _up(self) -> None:
        if self._down_since is not None:
            self.gaps.append((self._down_since, time.time()))
        self._down_since = None
        self._ready.set()

    def _lost(self) -> None:
        if self._down_since is None:
            self._down_since = time.time()

    def _wants(self, line: bytes) -> bool:
        """Whether a raw MONITOR line is worth parsing (a follower keeping a few keys says no
        to the rest cheaply: every command of the run passes here)."""
        return True

    def _command(self, t: float, db: int, client: str, args: list[bytes]) -> None:
        raise NotImplementedError
