"""lab init's HTTP to the app: a browser's cookie jar, JSON (or a form) in and JSON out, never raising."""

from __future__ import annotations

import http.cookiejar
import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from lab.common.html_select import hidden_inputs

TIMEOUT_S = 10.0


class Client:
    """HTTP with a cookie jar, as a browser keeps the app's cookies; JSON in and out."""

    def __init__(self, base_url: str) -> None:
        self.base = base_url.rstrip("/")
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        self.headers: dict[str, str] = {}
        self.body = ""  # the last answer's body as text (a stream's, whose events the draft reads)
        self.chunked = False  # the last answer came in chunks, with no length (a stream, if its type says so)
        self.form = False  # bodies sent as an HTML form posts them (the chat route took only that)
        self.csrf: tuple[str, str] | None = None  # (cookie, header): its token echoed on every POST
        self.path = "/"  # the path the last answer came from (after redirects: / -> /c/8f3a)
        # The hidden inputs of the last page's forms (a CSRF token): posted with every form, as
        # the browser posts them with the message typed in.
        self.hidden: dict[str, str] = {}
        self.post_headers: dict[str, str] = {}  # what the app's page sends with a message (HX-Request)

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, str, Any]:
        """(status, content type, JSON or None); status 0 when nothing answered."""
        status, ctype, raw = self._raw(method, path, body)
        self.body = raw.decode("utf-8", errors="replace")
        try:
            doc = json.loads(raw) if "json" in ctype else None
        except ValueError:
            doc = None
        return status, ctype, doc

    def text(self, path: str) -> tuple[int, str, str]:
        """A GET's (status, content type, body as text): the app's page and its scripts."""
        status, ctype, raw = self._raw("GET", path, None)
        return status, ctype, raw.decode("utf-8", errors="replace")

    def _raw(self, method: str, path: str, body: Any) -> tuple[int, str, bytes]:
        self.chunked = False
        if body is not None and self.form and isinstance(body, dict):
            fields = {**self.hidden, **body}
            data: bytes | None = urllib.parse.urlencode(
                {k: v if isinstance(v, str) else json.dumps(v) for k, v in fields.items()}
            ).encode()
            ctype = "application/x-www-form-urlencoded"
        else:
            data, ctype = (None if body is None else json.dumps(body).encode()), "application/json"
        headers = dict(self.headers) | (self.post_headers if method != "GET" else {})
        if self.csrf is not None and method != "GET" and (token := self.cookies().get(self.csrf[0])) is not None:
            headers[self.csrf[1]] = urllib.parse.unquote(token)
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        if data is not None:
            req.add_header("Content-Type", ctype)
        try:
            with self.opener.open(req, timeout=TIMEOUT_S) as resp:
                self.chunked = "chunked" in resp.headers.get("transfer-encoding", "").lower()
                self.path = urllib.parse.urlsplit(resp.geturl()).path or "/"
                ctype, raw = resp.headers.get("content-type", ""), resp.read()
                if "text/html" in ctype:
                    self.hidden = hidden_inputs(raw.decode("utf-8", errors="replace")) or self.hidden
                return resp.status, ctype, raw
        except urllib.error.HTTPError as exc:
            return exc.code, exc.headers.get("content-type", ""), exc.read()
        except OSError:
            return 0, "", b""

    def cookies(self) -> dict[str, str]:
        return {c.name: c.value or "" for c in self.jar}
