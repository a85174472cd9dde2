"""Who a browser context is to the app: its login ([auth]) and its conversation's id
([session]) -- read where the browser keeps it (the app's cookie, or the localStorage of the
lab's page), so the lab reads the history and the Redis key of exactly that conversation."""

from __future__ import annotations

import json
import os
import re
from typing import Any
from urllib.parse import parse_qs, quote, urlencode, urlsplit

from playwright.async_api import BrowserContext

from lab.common import redact
from lab.investigate.browser.page_frames import SESSION_KEY
from lab.investigate.evidence.rows import json_path
from lab.investigate.spec.parse import Spec
from lab.investigate.spec.schema import MINTED
from lab.investigate.spec.shapes import login_body

# The lab's own reads (the settled history, the page's "/", a login) go out through the browser
# context's request API, whose pooled keep-alive socket outlives a server's idle timeout (Node's
# 5 s): a reuse at that moment is reset before the app reads it (`read ECONNRESET`, one trial of
# ~1 800 in a CI run, 2026-12-07). A browser retries such a request; so does the lab -- only on a
# reset, which Playwright's max_retries alone retries.
RESET_RETRIES = 2


class Identity:
    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.token: str | None = None  # a token login's, fetched once per run (a user logged in)

    def auth_headers(self) -> dict[str, str]:
        a = self.spec.auth
        if a is None:
            return {}
        value = os.environ.get(a.header_env, "") if a.header_env else self.token
        if not value:
            return {}
        return {a.header: f"{a.scheme} {value}" if a.scheme else value}

    async def login(self, ctx: BrowserContext) -> None:
        """Log ``ctx`` in as the spec says (a new user's browser, or one after a restart): the
        token goes into every request's header, or the login's cookie stays in ``ctx``."""
        from lab.investigate.target.process import TargetError

        a = self.spec.auth
        if a is None or a.header_env or (a.token_path and self.token):
            await ctx.set_extra_http_headers(self.auth_headers())
            return
        assert a.login_path is not None
        resp = await ctx.request.post(
            self.spec.url(a.login_path),
            data=login_body(a),
            fail_on_status_code=False,
            timeout=30_000,
            max_retries=RESET_RETRIES,
        )
        body = await resp.text()
        if not 200 <= resp.status < 300:
            raise TargetError(
                f"the login POST {a.login_path} answered {resp.status}: {redact.text(body[:160])!r}",
                f"check [auth] and the variables it names ({', '.join(a.secret_envs)})",
            )
        if a.token_path:
            try:
                token = json_path(json.loads(body), a.token_path)
            except (ValueError, KeyError) as exc:
                raise TargetError(
                    f"the login POST {a.login_path} answered {resp.status} without a token at {a.token_path}: {exc}",
                    "fix [auth] token (a JSON path into the login's answer), or omit it if the login sets a cookie",
                ) from None
            self.token = str(token)
            redact.add(self.token)
            await ctx.set_extra_http_headers(self.auth_headers())

    async def session_id(self, ctx: BrowserContext) -> str | None:
        """The conversation's id in ``ctx``, where the browser keeps it; None before it has one."""
        s = self.spec.session
        if s.is_cookie:
            c = await self.cookie(ctx)
            return None if c is None else str(c["value"])
        if fixed := fixed_id(self.spec):
            return fixed
        if self.spec.page is not None and s.page_url:  # the app's page shows it in its URL
            return next((m for p in ctx.pages if (m := page_session(self.spec, p.url))), None)
        key = s.page_storage if self.spec.page is not None else SESSION_KEY
        return local_storage(await ctx.storage_state(), origin(self.spec)).get(key or SESSION_KEY)

    async def cookie(self, ctx: BrowserContext) -> dict[str, Any] | None:
        return session_cookie(self.spec, [dict(c) for c in await ctx.cookies()])

    async def cookie_scope(self, ctx: BrowserContext) -> dict[str, Any] | None:
        """The session cookie's Path against the routes the conversation uses (None: none)."""
        c = await self.cookie(ctx) if self.spec.session.is_cookie else None
        return None if c is None else cookie_scope(self.spec, c)

    async def history_request(self, ctx: BrowserContext) -> tuple[str, dict[str, str]] | None:
        """The history's URL and headers for ``ctx``'s conversation (None: it has none yet)."""
        got = history_target(self.spec, await self.session_id(ctx))
        return None if got is None else (got[0], {**self.auth_headers(), **got[1]})


def fixed_id(spec: Spec) -> str | None:
    """The one conversation id every browser uses ([session] source = "fixed"), if the spec has one."""
    s = spec.session
    return s.value if s.source == "fixed" and s.value and not any(m in s.value for m in MINTED) else None


def origin(spec: Spec) -> str:
    u = urlsplit(spec.http.base_url)
    return f"{u.scheme}://{u.netloc}"


def history_target(spec: Spec, sid: str | None) -> tuple[str, dict[str, str]] | None:
    """The history's URL and the session's header for the conversation ``sid`` (None: a session
    not in a cookie has no id yet, so there is no conversation to read)."""
    s, path = spec.session, spec.history.path
    if s.is_cookie:
        return spec.url(path), {}
    if sid is None:
        return None
    headers: dict[str, str] = {}
    if s.carrier == "path":
        path = path.replace("{session}", quote(sid, safe=""))
    elif s.carrier == "query":
        path += ("&" if "?" in path else "?") + urlencode({s.name: sid})
    else:
        headers[s.name] = sid
    return spec.url(path), headers


def local_storage(state: Any, origin: str) -> dict[str, str]:
    """An origin's localStorage in a Playwright storage state."""
    for o in state.get("origins", []):
        if o.get("origin") == origin:
            return {i["name"]: i["value"] for i in o.get("localStorage", [])}
    return {}


def page_session(spec: Spec, url: str) -> str | None:
    """The conversation's id in a page's URL: by [session] page_url -- or, a page that is the
    answer to a form's POST (no redirect after it), by the chat path the form posted to."""
    path = urlsplit(url).path
    by_page = page_url_id(spec.session.page_url, path) if spec.session.page_url else None
    return by_page or (page_url_id(spec.chat.path, path) if "{session}" in spec.chat.path else None)


def page_url_id(pattern: str, path: str) -> str | None:
    """The id in a page's URL path, by the spec's pattern (/c/{session})."""
    head, _, tail = pattern.partition("{session}")
    m = re.fullmatch(re.escape(head) + "([^/]+)" + re.escape(tail), path)
    return m.group(1) if m else None


def path_matches(cookie_path: str, request_path: str) -> bool:
    """RFC 6265 5.1.4: whether a cookie of ``cookie_path`` is sent with a request for
    ``request_path`` (the path itself, or below it at a "/")."""
    cookie_path = cookie_path or "/"
    if request_path == cookie_path:
        return True
    return request_path.startswith(cookie_path) and (cookie_path.endswith("/") or request_path[len(cookie_path)] == "/")


def _domain_matches(domain: str, host: str) -> bool:
    d = domain.lstrip(".").lower()
    return host == d or host.endswith("." + d)


def session_cookie(spec: Spec, cookies: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The conversation's cookie among every cookie of a browser context: its name, for the
    app's host, on any path. Looking it up for the base URL alone filters by path: a cookie
    scoped to the send route (Path=/api/send) would be missed, and the lab would read no key.
    Of several (one name on several paths), the one the send route carries."""
    host = (urlsplit(spec.http.base_url).hostname or "").lower()
    mine = [
        c for c in cookies if c.get("name") == spec.session.name and _domain_matches(str(c.get("domain", "")), host)
    ]
    if not mine:
        return None
    send = urlsplit(spec.url(chat_route(spec))).path
    # The send route's own first, then the most specific path (what the browser sends first).
    return max(mine, key=lambda c: (path_matches(str(c.get("path", "/")), send), len(str(c.get("path", "/")))))


def chat_route(spec: Spec) -> str:
    """The path messages go to: the chat POST, or the transport's (WebSocket, Socket.IO)."""
    return spec.transport.path if spec.transport is not None else spec.chat.path


def cookie_scope(spec: Spec, cookie: dict[str, Any]) -> dict[str, Any]:
    """Whether the browser sends the session cookie to the history route and the send route:
    a Path that covers one and not the other splits the conversation in two (sends in one
    session, the history read, with no cookie, in none)."""
    path = str(cookie.get("path") or "/")
    history = urlsplit(spec.url(spec.history.path)).path
    send = urlsplit(spec.url(chat_route(spec))).path
    return {
        "name": cookie.get("name"),
        "path": path,
        "history_path": history,
        "covers_history": path_matches(path, history),
        "covers_send": path_matches(path, send),
    }


def sent_id(spec: Spec, requests: list[Any]) -> str | None:
    """The conversation's id as the first of ``requests`` (a user's own chat requests, newest
    first) to carry one carried it: its query parameter, header or path segment, or a field of
    its body -- a user's test keeps its conversation's id where it likes, not where the lab's
    page does."""
    s = spec.session
    for req in requests:
        if s.carrier == "query":
            got = parse_qs(urlsplit(req.url).query).get(s.name)
            if got:
                return str(got[0])
        elif s.carrier == "header" and req.headers.get(s.name.lower()):
            return str(req.headers[s.name.lower()])
        elif s.carrier == "path" and (sid := page_url_id(spec.chat.path, urlsplit(req.url).path)):
            return sid
        if s.field and (sid := _body_field(req.post_data, s.field)):  # or in the message's body
            return sid
    return None


def _body_field(body: str | None, name: str) -> str | None:
    try:
        return field_id(json.loads(body or ""), name)
    except ValueError:
        return None


def field_id(body: Any, name: str) -> str | None:
    """The id a message's body carries in its ``name`` field: a string or a number, not empty
    (a request's JSON body, a socket's message frame)."""
    got = body.get(name) if isinstance(body, dict) else None
    return str(got) if isinstance(got, (str, int)) and got != "" else None
