"""A small chat backend in another style, to show what a target spec copes with: no health
endpoint, no message ids, history as newest-first "role:content" strings under $.messages, a
cookie named `sid`, and HTML 500 pages. Stdlib HTTP server + synchronous redis-py; correct (each
write awaited, the TTL renewed atomically with it), so `lab investigate` should find nothing.

    REDIS_URL=redis://127.0.0.1:16380/0 PORT=18191 python examples/foreign_app.py
"""

from __future__ import annotations

import json
import os
import uuid
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import redis

TTL_S = 7 * 24 * 3600
r = redis.Redis.from_url(os.environ["REDIS_URL"], socket_timeout=5, socket_connect_timeout=3, retry=None)


class Handler(BaseHTTPRequestHandler):
    def _sid(self) -> tuple[str, bool]:
        jar = SimpleCookie(self.headers.get("Cookie", ""))
        sid = jar["sid"].value if "sid" in jar else ""
        return (sid, False) if len(sid) == 32 and sid.isalnum() else (uuid.uuid4().hex, True)

    def _send(self, status: int, body: bytes, ctype: str, sid: str | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        if sid:
            self.send_header("Set-Cookie", f"sid={sid}; Max-Age={30 * 24 * 3600}; Path=/; HttpOnly; SameSite=Lax")
        self.end_headers()
        self.wfile.write(body)

    def _error(self, exc: Exception) -> None:
        page = f"<html><body><h1>500 Internal Server Error</h1><p>{type(exc).__name__}</p></body></html>"
        self._send(500, page.encode(), "text/html; charset=utf-8")

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        if self.path != "/api/messages":
            self._send(404, b"<html><body>not found</body></html>", "text/html")
            return
        sid, _ = self._sid()
        try:
            items = [x.decode() for x in r.lrange(f"conv:{sid}", 0, -1)]  # newest first (LPUSH)
        except redis.RedisError as exc:
            self._error(exc)
            return
        self._send(200, json.dumps({"messages": items}).encode(), "application/json", sid)

    def do_POST(self) -> None:  # noqa: N802
        if self.path != "/api/send":
            self._send(404, b"<html><body>not found</body></html>", "text/html")
            return
        sid, _ = self._sid()
        try:
            text = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))["text"]
        except (ValueError, KeyError, TypeError):
            self._send(400, b'{"error": "body must be {\\"text\\": ...}"}', "application/json", sid)
            return
        key = f"conv:{sid}"
        try:
            n = r.llen(key)
            answer = f"You said {len(text)} characters; this is message {n // 2 + 1}."
            with r.pipeline(transaction=True) as p:  # both rows and the TTL renewal, or nothing
                p.lpush(key, f"user:{text}", f"bot:{answer}")
                p.expire(key, TTL_S)
                p.execute()
        except redis.RedisError as exc:
            self._error(exc)
            return
        self._send(200, json.dumps({"answer": answer}).encode(), "application/json", sid)

    def log_message(self, fmt: str, *args: object) -> None:
        print(fmt % args, flush=True)


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])), Handler).serve_forever()
