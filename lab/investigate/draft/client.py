"""lab init's HTTP to the app: a browser's cookie jar, JSON (or a form) in and JSON out, never raising."""

from __future__ import annotations

import http.cookiejar
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from collections.abc import Iterable, Iterator

from lab.common.html_select import hidden_inputs, metas

TIMEOUT_S = 10.0
# A CSRF cookie's conventional header: Django's, then Laravel's and Angular's.
CSRF_HEADERS = {"csrftoken": "X-CSRFToken", "XSRF-TOKEN": "X-XSRF-TOKEN"}
# The headers pages send a <meta> tag's token in (names are case-blind): Rails, Phoenix, Laravel,
# gorilla/csrf; Django and Flask-WTF; csurf.
META_HEADERS = ("X-CSRF-Token", "X-CSRFToken", "X-XSRF-TOKEN", "CSRF-Token")
# A header a page's script names in quotes for a CSRF token ('X-CSRFToken', "x-csrf-token").
_CSRF_NAMED = re.compile(r"""["'](X-(?:[A-Za-z]+-)?[CX]SRF-?(?:Token)?)["']""", re.IGNORECASE)


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
        self.metas: dict[str, str] = {}  # the last page's <meta> tags (a CSRF token), and where it was
        self.metas_at = "/"
        self.csrf_meta: tuple[str, str] | None = None  # (meta name, header): its token sent on every POST

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
        if self.csrf_meta is not None and method != "GET" and self.csrf_meta[0] in self.metas:
            headers[self.csrf_meta[1]] = self.metas[self.csrf_meta[0]]
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        if data is not None:
            req.add_header("Content-Type", ctype)
        try:
            with self.opener.open(req, timeout=TIMEOUT_S) as resp:
                self.chunked = "chunked" in resp.headers.get("transfer-encoding", "").lower()
                self.path = urllib.parse.urlsplit(resp.geturl()).path or "/"
                ctype, raw = resp.headers.get("content-type", ""), resp.read()
                if "text/html" in ctype:
                    page = raw.decode("utf-8", errors="replace")
                    self.hidden = hidden_inputs(page) or self.hidden
                    tags = metas(page)
                    if any(_token_meta(k) for k in tags):
                        self.metas, self.metas_at = tags, self.path
                return resp.status, ctype, raw
        except urllib.error.HTTPError as exc:
            return exc.code, exc.headers.get("content-type", ""), exc.read()
        except OSError:
            return 0, "", b""

    def cookies(self) -> dict[str, str]:
        return {c.name: c.value or "" for c in self.jar}

    def csrf_ways(self, texts: Iterable[str] = ()) -> Iterator[tuple[str, str, str]]:
        """Each way the app's page could send a CSRF token this client holds, in turn: ("cookie"
        or "meta", its name, the header) -- first the headers the page's ``texts`` (its scripts)
        name. While the caller tries one, the client sends the token so on every POST; past the
        last, neither."""
        named = list(dict.fromkeys(h for t in texts for h in _CSRF_NAMED.findall(t)))
        for name in [n for n in self.cookies() if "csrf" in n.lower() or "xsrf" in n.lower()]:
            for header in dict.fromkeys([*named, CSRF_HEADERS.get(name, "X-CSRF-Token"), *CSRF_HEADERS.values()]):
                self.csrf = (name, header)
                yield "cookie", name, header
        self.csrf = None
        spring = self.metas.get("_csrf_header")  # Spring Security's pages name the header in a meta too
        for name in [n for n in self.metas if _token_meta(n)]:
            for header in dict.fromkeys([*([spring] if spring and name == "_csrf" else []), *named, *META_HEADERS]):
                self.csrf_meta = (name, header)
                yield "meta", name, header
        self.csrf_meta = None


def _token_meta(name: str) -> bool:
    """A <meta> name holding a CSRF token (csrf-token, _csrf, _token), not its field's or header's name."""
    low = name.lower()
    return ("csrf" in low or "xsrf" in low or low == "_token") and not low.endswith(("param", "header"))
