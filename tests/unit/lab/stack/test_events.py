"""BackendEvents.wait_until: woken when the backend's log grows (inotify), and honest at the
deadline. A real file written by a real thread; no backend needed."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path

from lab.stack.events import BackendEvents


def _run(coro):  # type: ignore[no-untyped-def]
    """asyncio.run in a thread of its own: the session may hold a running loop (Playwright's)."""
    out: list[object] = []
    t = threading.Thread(target=lambda: out.append(asyncio.run(coro)))
    t.start()
    t.join(30)
    return out[0]


def _append(path: Path, event: dict[str, object]) -> None:
    with open(path, "a") as fh:
        fh.write("INFO " + json.dumps(event) + "\n")


def test_wakes_when_the_event_is_written(tmp_path: Path) -> None:
    log = tmp_path / "backend.log"
    log.write_text("")
    events = BackendEvents(log)

    async def main() -> tuple[bool, float]:
        written = threading.Event()
        loop = asyncio.get_running_loop()
        # Written from another thread once the waiter is waiting, as the backend writes it.
        loop.call_later(
            0.05,
            lambda: threading.Thread(
                target=lambda: (_append(log, {"event": "chat.received", "id": "m1"}), written.set())
            ).start(),
        )
        t0 = time.monotonic()
        ok = await events.wait_until(lambda: events.count("chat.received", "m1") == 1, 5.0)
        return ok, time.monotonic() - t0

    try:
        ok, waited = _run(main())
    finally:
        events.close()
    assert ok and waited >= 0.05  # it waited for the write (lower bound), and saw it


def test_false_at_the_deadline(tmp_path: Path) -> None:
    log = tmp_path / "backend.log"
    log.write_text("")
    events = BackendEvents(log)
    try:
        t0 = time.monotonic()
        assert _run(events.wait_until(lambda: events.seen("chat.done", "m9"), 0.2)) is False
        assert time.monotonic() - t0 >= 0.2
    finally:
        events.close()
