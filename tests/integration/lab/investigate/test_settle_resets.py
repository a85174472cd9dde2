"""The lab's settled read of the history survives a keep-alive socket the app reset: the browser
context's request API reuses its pooled socket after a server closed it (Node's 5 s idle timeout),
and the reuse is reset before the app reads it -- `read ECONNRESET`, which made one CI trial of
~1 800 unknown (2026-12-07). A browser retries such a request; the lab's reads do too.

The app here resets every connection's second request, so each read after the first goes out on
a reused socket and is reset -- deterministic where the real race is not. Real Chromium; no Redis."""

from __future__ import annotations

import dataclasses
import json
import socket
import struct
import threading
from collections.abc import Iterator

import pytest

from tests.helpers import run_async

from lab.investigate.browser import identity, settle
from lab.investigate.browser.pages import Pages, chromium
from lab.investigate.spec import parse as sp
from lab.investigate.spec.parse import Spec
from lab.model.history import Row, Trial
from tests.unit.lab.investigate.spec.test_parse import ROOT

_HISTORY = json.dumps({"messages": ["bot:hi there", "user:hello"]}).encode()


class _ResettingApp:
    """Answers each connection's first request (keep-alive), resets the connection on its second."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.sock.getsockname()[1]
        self.answered = 0
        self.resets = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:  # closed by the fixture
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buf, served = b"", 0
        with conn:
            while data := conn.recv(65536):
                buf += data
                if b"\r\n\r\n" not in buf:
                    continue
                buf = b""
                if served:  # the reused socket: RST, as a server's close racing the reuse leaves it
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.resets += 1
                    return
                served += 1
                self.answered += 1
                head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(_HISTORY)}\r\n"
                conn.sendall(head.encode() + b"Connection: keep-alive\r\n\r\n" + _HISTORY)


@pytest.fixture
def app() -> Iterator[_ResettingApp]:
    a = _ResettingApp()
    yield a
    a.sock.close()


def _spec(port: int) -> Spec:
    """examples/foreign-app.toml on the test app's port, driving the lab's page."""
    spec = sp.load(ROOT / "examples" / "foreign-app.toml")
    http = dataclasses.replace(spec.http, base_url=f"http://127.0.0.1:{port}", port=port)
    return dataclasses.replace(spec, http=http, page=None)


async def _settled(spec: Spec) -> list[Row] | None:
    async with chromium() as browser:
        pages = Pages(spec, browser)
        slot = await pages.pool.take()
        try:
            await pages.ready(slot)
            return await settle.final_read(pages, slot.ctx, Trial(trial_id="t"), lambda raw, t: pages.rows(raw))
        finally:
            await pages.close()


def test_the_settled_read_goes_on_through_reset_sockets(app: _ResettingApp) -> None:
    rows = run_async(_settled(_spec(app.port)))
    assert rows is not None and [(r.role, r.text) for r in rows] == [("user", "hello"), ("assistant", "hi there")], rows
    # Settling took several reads, each after the first reset once and answered on a new socket.
    assert app.answered >= 3 and app.resets == app.answered - 1, (app.answered, app.resets)


def test_without_the_retry_a_reset_read_fails(app: _ResettingApp, monkeypatch: pytest.MonkeyPatch) -> None:
    """The contrast: the same reads with no retry end at the first reset."""
    monkeypatch.setattr(settle, "RESET_RETRIES", 0)
    assert identity.RESET_RETRIES > 0
    with pytest.raises(Exception, match="ECONNRESET"):
        run_async(_settled(_spec(app.port)))
