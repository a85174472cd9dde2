"""The built-in service's model client (services.chat.llm.ask): each pool thread keeps its
connection to the provider between calls, opens a new one where the provider closed it (never a
request resent), and a failed or cut answer is the call's failure (ModelFailed), as before."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from lab.common.wait import wait_until
from services.chat import llm
from tests.helpers import run_async

REPLY = {"choices": [{"message": {"role": "assistant", "content": "hello"}}]}


class _Provider(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.connections = 0
        self.requests = 0
        # ok | close (answer saying Connection: close) | drop (answer, then close without a
        # word) | error | cut
        self.mode = "ok"
        self.closed = threading.Event()  # a connection closed by this side

    def get_request(self) -> tuple[object, object]:
        self.connections += 1
        return super().get_request()  # type: ignore[return-value]

    def shutdown_request(self, request: object) -> None:
        super().shutdown_request(request)  # type: ignore[arg-type]
        self.closed.set()


class _Handler(BaseHTTPRequestHandler):
    server: _Provider
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers["Content-Length"]))
        self.server.requests += 1
        data = json.dumps(REPLY).encode()
        status = 500 if self.server.mode == "error" else 200
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if self.server.mode == "close":
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data[: len(data) // 2] if self.server.mode == "cut" else data)
        if self.server.mode in ("close", "drop", "cut"):
            self.close_connection = True


@pytest.fixture
def provider() -> Iterator[_Provider]:
    server = _Provider()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _ask(server: _Provider, n: int = 1) -> list[str]:
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"

    async def main() -> list[str]:
        return [await llm.ask(url, [], f"hi {i}", 5.0) for i in range(n)]

    return run_async(main())  # (a thread of its own: a browser test before may hold this one's loop)


@pytest.fixture(autouse=True)
def one_thread(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A pool of one thread: its connection is the one every call finds kept."""
    pool = ThreadPoolExecutor(max_workers=1)
    monkeypatch.setattr(llm, "_POOL", [pool])
    yield
    pool.submit(llm.close_kept).result()  # (its thread's kept connection, closed as the test ends)
    pool.shutdown()


def _close_seen(port: int) -> bool:
    """Some connection to 127.0.0.1:``port`` is in CLOSE_WAIT on the client's side (/proc/net/tcp:
    remote address in hex, state 08): the peer's FIN has arrived."""
    remote = f"0100007F:{port:04X}"
    rows = [line.split() for line in Path("/proc/net/tcp").read_text().splitlines()[1:]]
    return any(r[2] == remote and r[3] == "08" for r in rows)


def test_calls_share_a_kept_connection(provider: _Provider) -> None:
    assert _ask(provider, 6) == ["hello"] * 6
    assert (provider.requests, provider.connections) == (6, 1)


def test_a_connection_the_provider_closed_is_replaced_not_resent(provider: _Provider) -> None:
    provider.mode = "close"  # said in the answer: closed at once
    assert _ask(provider, 3) == ["hello"] * 3
    assert (provider.requests, provider.connections) == (3, 3)
    provider.mode = "drop"  # closed without a word: seen before the next send
    provider.closed.clear()
    assert _ask(provider) == ["hello"]
    assert provider.closed.wait(5)
    # The client's end has the provider's FIN (CLOSE_WAIT) before the next send: the kernel hands
    # it over on loopback later on a loaded machine (a 4-worker CI run: the send met the close,
    # failed, and -- rightly -- was not resent). A FIN still in flight is a race no client wins.
    wait_until(lambda: _close_seen(provider.server_address[1]) or None, what="the provider's close seen", timeout_s=5)
    assert _ask(provider) == ["hello"]
    # Each call sent once, each on a new connection.
    assert (provider.requests, provider.connections) == (5, 5)


def test_an_error_or_a_cut_answer_is_the_calls_failure(provider: _Provider) -> None:
    provider.mode = "error"
    with pytest.raises(llm.ModelFailed, match="HTTP 500"):
        _ask(provider)
    provider.mode = "cut"
    with pytest.raises(llm.ModelFailed, match="did not answer"):
        _ask(provider)
    provider.mode = "ok"
    assert _ask(provider) == ["hello"]  # the broken connection was not kept
