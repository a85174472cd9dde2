"""The stand-in's HTTP server: the providers' routes (lab.standin.protocols), their model lists,
and the lab's own control routes under /_lab/ -- set or clear a plan, read the calls recorded.
Threaded (one thread per connection, as calls stream side by side); streams use chunked
transfer encoding so that a cut -- the connection closed before the final event and the last
chunk -- reads to the app exactly as a broken provider stream does."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from lab.standin import protocols
from lab.standin.behaviour import Behaviour, BehaviourError, Plans
from lab.standin.protocols import Answer, Protocol
from lab.standin.reply import reply_text, tokens

MODEL = "chaoslab-standin"
MAX_BODY = 4 * 1024 * 1024


class StandIn(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int]) -> None:
        super().__init__(address, Handler)
        protocols.load()
        self.plans = Plans()
        self.calls: list[dict[str, Any]] = []
        self.open: dict[int, dict[str, Any]] = {}  # calls still being answered, by id()
        self.lock = threading.Lock()

    def opened(self, call: dict[str, Any]) -> None:
        with self.lock:
            self.open[id(call)] = call

    def record(self, call: dict[str, Any]) -> None:
        with self.lock:
            self.open.pop(id(call), None)
            self.calls.append(call)


def _carries(call: dict[str, Any], match: str) -> bool:
    """The call's last user message carries ``match`` ("" matches every call)."""
    if not match:
        return True
    last = next((m["text"] for m in reversed(call["messages"]) if m["role"] == "user"), "")
    return match in last


def _wait(ms: int) -> None:
    # The provider's own pacing (time to first token, between tokens): the delay is the thing served.
    time.sleep(ms / 1000)


class Handler(BaseHTTPRequestHandler):
    server: StandIn
    protocol_version = "HTTP/1.1"
    # TCP_NODELAY: the headers and the body (and each streamed chunk) are separate writes; without
    # it a write may wait on the peer's ACK of the one before. Measured through Toxiproxy
    # (2026-12-03, 20 calls): median 1.6 ms a call without, 1.3 ms with.
    disable_nagle_algorithm = True

    def log_message(self, fmt: str, *args: object) -> None:
        pass  # the calls are recorded; a line per request would only be noise

    # ------------------------------------------------------------------ plumbing
    def _json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> dict[str, Any] | None:
        n = int(self.headers.get("Content-Length") or 0)
        if not 0 < n <= MAX_BODY:
            self._json(400, {"error": {"message": f"a JSON body of 1 to {MAX_BODY} bytes, got {n}"}})
            return None
        try:
            body = json.loads(self.rfile.read(n))
        except ValueError as exc:
            self._json(400, {"error": {"message": f"the body is not JSON: {exc}"}})
            return None
        if not isinstance(body, dict):
            self._json(400, {"error": {"message": "the body must be a JSON object"}})
            return None
        return body

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    # ------------------------------------------------------------------ routes
    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        url = urlsplit(self.path)
        if url.path == "/_lab/calls":
            query = parse_qs(url.query)
            since = float(query.get("since", ["0"])[0])
            # match: only the calls whose last user message carries it (one trial's, while trials
            # run side by side: the lab parses what it asked for, not the whole run's record).
            match = query.get("match", [""])[0]
            with self.server.lock:
                calls = [c for c in self.server.calls if c["t_start"] >= since and _carries(c, match)]
                # Oldest first by when each began: a call is recorded as its handler returns, and
                # a loaded machine may run one handler's last step after a later call's (CI, 2
                # cores, 4 workers: a 40 ms call listed after the 300 ms one made after it).
                calls.sort(key=lambda c: c["t_start"])
                # A page gone mid-answer does not end the app's call: the lab waits on these.
                still = [c for c in self.server.open.values() if c["t_start"] >= since and _carries(c, match)]
            self._json(200, {"calls": calls, "open": still})
        elif url.path == "/_lab/health":
            self._json(200, {"ok": True, "protocols": sorted(protocols.REGISTRY)})
        elif url.path == "/v1/models" and self.headers.get("anthropic-version"):
            model = {
                "type": "model",
                "id": MODEL,
                "display_name": "chaoslab stand-in",
                "created_at": "2026-01-01T00:00:00Z",
            }
            self._json(200, {"data": [model], "has_more": False, "first_id": MODEL, "last_id": MODEL})
        elif url.path == "/v1/models":
            self._json(
                200,
                {"object": "list", "data": [{"id": MODEL, "object": "model", "created": 0, "owned_by": "chaoslab"}]},
            )
        elif url.path == "/api/tags":
            self._json(200, {"models": [{"name": f"{MODEL}:latest", "model": f"{MODEL}:latest", "size": 0}]})
        else:
            self._json(404, {"error": {"message": f"no route GET {url.path}"}})

    def do_DELETE(self) -> None:  # noqa: N802
        url = urlsplit(self.path)
        if url.path == "/_lab/plans":
            self.server.plans.clear(parse_qs(url.query).get("match", [None])[0])
            self._json(200, {"ok": True})
        else:
            self._json(404, {"error": {"message": f"no route DELETE {self.path}"}})

    def do_POST(self) -> None:  # noqa: N802
        path = urlsplit(self.path).path
        body = self._body()
        if body is None:
            return
        if path == "/_lab/plans":
            try:
                match = str(body.pop("match", ""))
                self.server.plans.set(match, Behaviour.from_json(body))
            except (BehaviourError, TypeError) as exc:
                self._json(400, {"error": {"message": str(exc)}})
                return
            self._json(200, {"ok": True})
            return
        proto = protocols.by_path(path)
        if proto is None:
            valid = ", ".join(sorted(p.path for p in protocols.REGISTRY.values()))
            self._json(404, {"error": {"message": f"no route POST {path}: the stand-in serves {valid}"}})
            return
        self._call(proto, body)

    # ------------------------------------------------------------------ a model call
    def _call(self, proto: Protocol, body: dict[str, Any]) -> None:
        messages = proto.messages(body)
        last_user = next((m.text for m in reversed(messages) if m.role == "user"), "")
        match, b = self.server.plans.find(last_user)
        toks = tokens(reply_text(messages), b.tokens)
        prompt = sum(len(m.text.split()) for m in messages)
        answer = Answer(str(body.get("model") or MODEL), "".join(toks), toks, prompt, body)
        stream = proto.wants_stream(body)
        call: dict[str, Any] = {
            "protocol": proto.name,
            "t_start": time.time(),
            "stream": stream,
            "model": answer.model,
            "messages": [{"role": m.role, "text": m.text} for m in messages],
            "match": match,
            "behaviour": b.as_json(),
        }
        self.server.opened(call)
        self._open: dict[str, Any] | None = call
        try:
            self._answer(proto, answer, b, stream)
        except (BrokenPipeError, ConnectionResetError):
            with self.server.lock:  # the app hung up first (its own timeout, a cancel)
                call.update(outcome="client_gone")
        finally:
            self._ending({})

    def _ending(self, result: dict[str, Any]) -> None:
        """Record the call before its last bytes go out: the app learns its call has ended only
        from them, so whoever asks after the app's answer finds the call recorded."""
        if self._open is None:
            return
        call, self._open = self._open, None
        call.update(result)
        call["t_end"] = time.time()
        self.server.record(call)

    def _answer(self, proto: Protocol, a: Answer, b: Behaviour, stream: bool) -> None:
        if b.fault in ("rate_limit", "server_error", "overloaded"):
            status, err = proto.error(b.fault, f"chaoslab stand-in: {b.fault} (a fault the lab injected)")
            _wait(b.ttft_ms)
            self._ending({"status": status, "outcome": "error", "reply": None, "tokens_sent": 0})
            self._json(status, err, {"Retry-After": str(b.retry_after_s)} if b.fault == "rate_limit" else None)
            return
        if not stream:
            if b.fault == "no_first_token":
                return self._hold(b)
            _wait(b.ttft_ms)
            self._ending({"status": 200, "outcome": "whole", "reply": a.text, "tokens_sent": len(a.tokens)})
            self._json(200, proto.whole(a))
            return
        self._stream(proto, a, b)

    def _stream(self, proto: Protocol, a: Answer, b: Behaviour) -> None:
        self.send_response(200)
        self.send_header("Content-Type", proto.stream_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if b.fault == "no_first_token":
            return self._hold(b)
        _wait(b.ttft_ms)
        for event in proto.head(a):
            self._chunk(event)
        sent = 0
        for i, tok in enumerate(a.tokens):
            if b.fault == "cut" and i >= b.cut_after:
                return self._cut(a, sent)
            if i:
                _wait(b.token_ms)
            self._chunk(proto.token(a, tok, i))
            sent += 1
        self._ending({"status": 200, "outcome": "whole", "reply": a.text, "tokens_sent": sent})
        for event in proto.tail(a):
            self._chunk(event)
        self.wfile.write(b"0\r\n\r\n")

    def _cut(self, a: Answer, sent: int) -> None:
        """The stream stops: no final event, no last chunk -- the connection just closes."""
        self._ending({"status": 200, "outcome": "cut", "reply": "".join(a.tokens[:sent]), "tokens_sent": sent})
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)

    def _hold(self, b: Behaviour) -> None:
        """Nothing more for hold_ms (past the app's timeout), then the connection closes."""
        _wait(b.hold_ms)
        self._ending({"status": None, "outcome": "held", "reply": None, "tokens_sent": 0})
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)
