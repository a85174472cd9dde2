"""The backend's JSON events, read incrementally from its log (services/chat/views.py ``event``).

The driver uses them as observable triggers (``in_flight``: the backend logged receipt of a
message) and for quiescence (every received message has its ``chat.done``)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any


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
