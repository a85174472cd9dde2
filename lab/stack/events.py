"""The backend's JSON events, read incrementally from its log (services/chat/views.py ``event``).

The driver uses them as observable triggers (``in_flight``: the backend logged receipt of a
message) and for quiescence (every received message has its ``chat.done``). ``wait_until``
wakes when the log grows (inotify on its folder), not on a timer; where inotify is not
available it reads the log every few milliseconds instead."""

from __future__ import annotations

import asyncio
import ctypes
import json
import os
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lab.common.errors import NotReady
from lab.common.wait import wait_until_async

_IN_MODIFY, _IN_CREATE, _IN_MOVED_TO = 0x2, 0x100, 0x80
FALLBACK_POLL_S = 0.005


def _inotify(folder: Path) -> int | None:
    """A non-blocking inotify descriptor watching ``folder`` for writes and new files, or None."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            return None
        if libc.inotify_add_watch(fd, str(folder).encode(), _IN_MODIFY | _IN_CREATE | _IN_MOVED_TO) < 0:
            os.close(fd)
            return None
        return fd
    except (OSError, AttributeError):
        return None


class BackendEvents:
    def __init__(self, log_path: Path, from_start: bool = False) -> None:
        self.path = log_path
        self._offset = 0
        self._partial = b""
        self.all: list[dict[str, Any]] = []
        self.by_id: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.by_sid: dict[str, list[dict[str, Any]]] = defaultdict(list)
        if not from_start:
            try:  # only events from now on concern this reader
                self._offset = log_path.stat().st_size
            except FileNotFoundError:
                pass

    async def wait_until(self, cond: Callable[[], bool], timeout_s: float) -> bool:
        """Until ``cond()`` holds (re-checked each time the log grows); False at the deadline."""

        def check() -> bool:
            self.poll()
            return cond()

        try:
            await wait_until_async(
                check, what="backend events", timeout_s=timeout_s, transient=(), wake=self._next_change
            )
        except NotReady:
            return False
        return True

    async def _next_change(self, max_s: float) -> None:
        try:
            await asyncio.wait_for(self._changed().wait(), min(max_s, 0.5))  # 0.5 s: a missed wake-up costs no more
        except TimeoutError:
            pass

    def _changed(self) -> asyncio.Event:
        """The event set on the next change of the log's folder (one watcher per reader)."""
        loop = asyncio.get_running_loop()
        if getattr(self, "_loop", None) is not loop:
            self._loop, self._event = loop, asyncio.Event()
            self._fd = _inotify(self.path.parent)
            if self._fd is not None:
                loop.add_reader(self._fd, self._wake)
        if self._fd is None:  # no inotify: wake on a short timer instead
            tick = asyncio.Event()
            loop.call_later(FALLBACK_POLL_S, tick.set)
            return tick
        return self._event

    def _wake(self) -> None:
        try:
            while self._fd is not None and os.read(self._fd, 65536):
                pass
        except BlockingIOError:
            pass
        self._event.set()
        self._event = asyncio.Event()

    def close(self) -> None:
        """Stop watching (the loop's reader and the inotify descriptor)."""
        fd, loop = getattr(self, "_fd", None), getattr(self, "_loop", None)
        if fd is not None:
            if loop is not None and not loop.is_closed():
                loop.remove_reader(fd)
            os.close(fd)
            self._fd = None

    def poll(self) -> None:
        try:
            with open(self.path, "rb") as fh:
                size = fh.seek(0, 2)
                if size < self._offset:  # log replaced (backend restarted into a new file)
                    self._offset = 0
                fh.seek(self._offset)
                data = self._partial + fh.read()
                self._offset = fh.tell()
        except FileNotFoundError:
            return
        *lines, self._partial = data.split(b"\n")
        for line in lines:
            start = line.find(b'{"event"')
            if start < 0:
                continue
            try:
                ev = json.loads(line[start:])
            except ValueError:
                continue
            self.all.append(ev)
            if "id" in ev:
                self.by_id[str(ev["id"])].append(ev)
            if "sid" in ev:
                self.by_sid[str(ev["sid"])].append(ev)

    def seen(self, name: str, mid: str) -> bool:
        self.poll()
        return any(e.get("event") == name for e in self.by_id.get(mid, []))

    def count(self, name: str, mid: str) -> int:
        return sum(e.get("event") == name for e in self.by_id.get(mid, []))

    def session_of(self, ids: list[str]) -> str | None:
        """The session the backend logged for the latest of these messages (in send order)."""
        for mid in reversed(ids):
            got = [e["sid"] for e in self.by_id.get(mid, []) if e.get("event") == "chat.received" and e.get("sid")]
            if got:
                return str(got[-1])
        return None

    def quiescent(self, ids: set[str]) -> bool:
        """Every request for these messages has ended (one chat.done per chat.received), and
        every stream that replied has closed: the lab may read Redis now."""
        for mid in ids:
            received = self.count("chat.received", mid)
            done = [e for e in self.by_id.get(mid, []) if e.get("event") == "chat.done"]
            if len(done) < received:
                return False
            streams = sum(1 for e in done if e.get("stream") and e.get("outcome") == "replied")
            if self.count("chat.stream_closed", mid) < streams:
                return False
        return True
