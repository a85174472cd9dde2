"""The browser side of black-box trials: pooled contexts, the page each trial drives (the app's
own, by its spec's selectors, or the lab's page served on the target's origin), reloads, a
browser restart, and the session cookie -- what a trial reads raw, for the prober to judge."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import cast

from playwright.async_api import Browser, BrowserContext, Error as PlaywrightError, Page, Request, Route

from lab.driver.browser import closing, launched
from lab.driver.slots import Pool, Slot
from lab.investigate.evidence.answers import Answer, HistoryRead
from lab.investigate.evidence.keys import KeyFinder, key_for
from lab.investigate.browser import app_frames, app_page, app_reload, cut, forms
from lab.driver.navigate import steady
from lab.investigate.browser.identity import RESET_RETRIES, Identity, page_session
from lab.investigate.browser.page import LOST_ANSWER, PAGE_PATH, TAKE_ANSWER_JS, html, shown
from lab.model.checker import NETWORK_CHANGED
from lab.model.history import Row, Send
from lab.investigate.evidence.rows import parse_rows
from lab.investigate.spec.parse import Spec


@dataclass
class Read:
    """One GET of the history: status, and the rows if the body was of the spec's form."""

    status: int | None
    rows: list[Row] | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300 and self.rows is not None


class Pages:
    def __init__(self, spec: Spec, browser: Browser, find: KeyFinder | None = None) -> None:
        self.spec, self.browser = spec, browser
        # The conversation's key, once known for a session, kept: one found by what it holds
        # ([redis] key with `*`) and later gone (expired, deleted) is evidence, not a reason to look again.
        self._find, self._found = find, dict[str, str]()
        self.identity = Identity(spec)
        # Browser contexts reused trial after trial, in the pool the chaos runner's slots are in: a
        # new context and page cost Chromium a renderer process each (measured: 1.8 s of a 4.5 s
        # trial to open). Opened as trials need them, cleared as they come back.
        self._pool = Pool(self._new_slot, reset=self._cleared)
        self._logged_in: set[int] = set()  # new contexts, logged in as they were opened
        # The bodies of the POSTs Chromium dropped when the machine's network changed, in any of
        # the pool's contexts: the lab's page sees only "Failed to fetch", the network names why
        # (a trial's texts are its own, so one list serves every context).
        self.dropped: list[str] = []
        self._reads_failed: list[tuple[float, str]] = []  # (when, the network's reason)

    @property
    def pool(self) -> Pool:
        """The contexts trials take (the runner's, through ``ready``)."""
        return self._pool

    async def ready(self, s: Slot) -> None:
        """A slot taken from the pool, fit for a trial: a new user logged in."""
        if id(s.ctx) in self._logged_in:
            self._logged_in.discard(id(s.ctx))
        else:
            await self.identity.login(s.ctx)  # its cookies were cleared: a new user logs in

    async def _new_slot(self) -> Slot:
        ctx = await self.browser.new_context()
        ctx.on("requestfailed", self._failed)
        await self.identity.login(ctx)  # first: a token learnt at the login goes into the lab's page
        self._logged_in.add(id(ctx))
        await self.serve_page(ctx)
        if self.spec.chat.reply_from == "history":  # the lab's page polls for the reply, read by the lab's parse
            await ctx.expose_function("labShown", lambda body, text, before: shown(self.spec, body, text, before))
        if self.spec.page is not None:
            await ctx.add_init_script(app_reload.reload_hook(self.spec))  # inert unless armed
            if self.spec.transport is not None:
                await ctx.add_init_script(app_frames.cut_hook(self.spec))  # inert unless armed
        return Slot(ctx, await self._watched(await ctx.new_page()))

    def _failed(self, req: Request) -> None:
        failure = req.failure or "failed"
        if req.method != "POST":  # a read: its reason, for a history read with no answer (read_failures)
            self._reads_failed.append((time.time(), failure))
        elif NETWORK_CHANGED in failure:
            self.dropped.append(req.post_data or "")

    def read_failures(self, since: float) -> list[str]:
        """The browser's reasons for the reads it failed since ``since``, in any context (the lab's
        page sees only "Failed to fetch"; the network names why: ``net::ERR_NETWORK_CHANGED``
        fails every context's requests in flight)."""
        return list(dict.fromkeys(f for t, f in self._reads_failed if t >= since))

    def error_of(self, read: Read, since: float) -> str | None:
        """A history read's failure (None: it succeeded); one with no answer carries the browser's
        reasons since ``since`` -- the app's (a reset connection) or the machine's
        (net::ERR_NETWORK_CHANGED: the checker's unknown)."""
        if read.ok:
            return None
        why = self.read_failures(since) if read.status is None else []
        return (read.error or f"HTTP {read.status}") + (f" ({'; '.join(why)})" if why else "")

    async def _watched(self, page: Page) -> Page:
        """What the page's network sees of its sends: the app's own page over its own socket
        reads its answers from the frames (app_frames); a cut mid-reply is checked on them
        (lab.investigate.browser.cut)."""
        await cut.watch(page, self.spec)
        return page

    async def serve_page(self, ctx: BrowserContext) -> None:
        """The lab's page (when the app's own is not driven), on the target's own origin, served
        by the browser: its cookies are real."""
        if self.spec.page is None:
            body = html(self.spec, self.identity.token)

            async def serve(route: Route) -> None:
                await route.fulfill(status=200, content_type="text/html; charset=utf-8", body=body)

            await ctx.route(self.spec.url(PAGE_PATH), serve)

    @staticmethod
    async def _cleared(s: Slot) -> bool:
        """A new user's browser: no cookie, no storage of the target's origin (False: a page
        that cannot even be cleared is broken)."""
        try:
            await s.page.evaluate("() => { try { localStorage.clear(); sessionStorage.clear(); } catch (e) {} }")
            await s.ctx.clear_cookies()
            return True
        except Exception:
            return False

    async def close(self) -> None:
        await self._pool.close(closing)

    async def open(self, ctx: BrowserContext, at: str | None = None) -> tuple[Page, HistoryRead]:
        """A new page in ``ctx`` showing the conversation, and its first history read (raw)."""
        await self.serve_page(ctx)
        page = await self._watched(await ctx.new_page())
        return page, await self.load(ctx, page, at)

    def _conversation_url(self, ctx: BrowserContext, page: Page) -> str | None:
        """Where another tab of ``ctx`` shows the conversation, if the app keeps its id in the
        URL (a second tab opens the same conversation, as a user opens its link)."""
        pattern = self.spec.session.page_url
        if pattern is None:
            return None
        for other in ctx.pages:
            sid = page_session(self.spec, other.url) if other is not page else None
            if sid:
                return pattern.replace("{session}", sid)
        return None

    async def load(self, ctx: BrowserContext, page: Page, at: str | None = None) -> HistoryRead:
        """Navigate ``page`` to the conversation (``at``: this path of the app's page); its
        first history read (raw)."""
        if self.spec.page is not None:
            url = self.spec.url(at or self._conversation_url(ctx, page) or self.spec.page.path)
            forms.forget(page)  # a pooled page's form state is its last trial's, not this one's
            return await app_page.load(page, self.spec, lambda: steady(lambda: page.goto(url)))
        wanted = {n for n in (self.spec.http.cookie, self.spec.http.csrf_cookie) if n}
        # Any path: a cookie scoped to /api is not one "/" would be sent, yet the app set it.
        if wanted - {c.get("name") for c in await ctx.cookies()}:
            # A user arrives at the app's page first: an app that sets its session cookie (or
            # its CSRF token's) only there (a Go app written unseen, 2026-12-06; Django's
            # csrftoken) refuses a socket or a send without it.
            await ctx.request.get(self.spec.url("/"), fail_on_status_code=False, max_retries=RESET_RETRIES)
        await steady(lambda: page.goto(self.spec.url(PAGE_PATH)))
        # A user types once the page shows its history. Sending earlier races the page's own
        # GET of the history: both go out without a cookie, each may start a session, and the
        # later Set-Cookie wins -- the first message then lands in another conversation.
        return cast(HistoryRead, await page.evaluate("window.labLoaded"))

    async def reload(self, page: Page) -> HistoryRead:
        """Reload ``page``; its first history read after the reload (raw)."""
        if self.spec.page is not None:
            return await app_page.load(page, self.spec, lambda: steady(lambda: forms.reload(page)))
        await steady(page.reload)
        return cast(HistoryRead, await page.evaluate("window.labLoaded"))

    async def send_then_reload(
        self, page: Page, text: str, mid: str | None, streamed: bool, delay_ms: int = 0
    ) -> tuple[Answer, HistoryRead]:
        """Send ``text``; the page reloads itself the moment the answer has arrived (the user
        refreshing right after it, with no round trip to the lab in between) -- or ``delay_ms``
        after it (lab window). The answer (raw) and the reloaded page's first history read (raw,
        with ``start``: when it left)."""
        if self.spec.page is not None:
            driver = app_frames if self.spec.transport is not None else app_reload
            return await driver.send_then_reload(page, self.spec, text, delay_ms)
        # The send and the reload: up to a timeout each (and the delay).
        timeout_ms = 2 * self.spec.chat.timeout_s * 1000 + delay_ms
        async with page.expect_event("domcontentloaded", timeout=timeout_ms):
            try:
                await page.evaluate(
                    "([t, i, s, d]) => labSendThenReload(t, i, s, 'read', d)", [text, mid, streamed, delay_ms]
                )
            except PlaywrightError as exc:
                # The reload may destroy the evaluation's context before its result is back:
                # the answer is in sessionStorage either way.
                if "context was destroyed" not in str(exc) and "navigat" not in str(exc):
                    raise
        loaded = cast(HistoryRead, await page.evaluate("window.labLoaded"))
        return cast(Answer, await page.evaluate(TAKE_ANSWER_JS) or dict(LOST_ANSWER)), loaded

    async def browser_restart(self, ctx: BrowserContext) -> HistoryRead:
        """A new context keeping what a browser keeps across a restart -- ``ctx``'s persistent
        cookies and its localStorage -- logged in again: its first history read."""
        # A conversation the app's page keeps in its URL: the restored tab (or its link) opens it.
        sid = await self.identity.session_id(ctx) if self.spec.session.page_url else None
        at = self.spec.session.page_url.replace("{session}", sid) if sid and self.spec.session.page_url else None
        state = await ctx.storage_state()
        # A browser restart keeps only persistent cookies (expires != -1).
        state["cookies"] = [c for c in state["cookies"] if c.get("expires", -1) != -1]
        fresh = await self.browser.new_context(storage_state=state)
        try:
            await self.identity.login(fresh)
            return (await self.open(fresh, at))[1]
        finally:
            await fresh.close()

    async def cookie_persistent(self, ctx: BrowserContext) -> bool | None:
        """Whether the session cookie outlives the browser (None: no session cookie)."""
        c = await self.identity.cookie(ctx) if self.spec.session.is_cookie else None
        return None if c is None else c.get("expires", -1) != -1

    async def session_key(self, ctx: BrowserContext, texts: Sequence[str] = ()) -> str | None:
        """The conversation's Redis key for this context's session ([redis] key), if known;
        ``texts``: the session's messages, by which a key of the `*` form is found."""
        sid = await self.identity.session_id(ctx)
        if sid is None:
            return None
        if sid not in self._found and (key := key_for(self.spec.redis.key, sid, texts, self._find)) is not None:
            self._found[sid] = key
        return self._found.get(sid)

    def rows(self, raw: HistoryRead) -> Read:
        """A raw history read as rows of the spec's form (an error where it is not)."""
        if raw.get("empty"):  # no conversation yet (its id comes with the first answer)
            return Read(raw["status"], [])
        if raw["status"] is None or not 200 <= raw["status"] < 300:
            return Read(raw["status"], None, raw["error"] or f"HTTP {raw['status']}: {raw['body'][:120]!r}")
        if "rows" in raw:  # the app's own page: what it rendered
            if raw["rows"] is None:
                return Read(raw["status"], None, raw["error"])
            h = self.spec.history
            names = {h.user_role: "user", h.assistant_role: "assistant"}
            return Read(raw["status"], [Row("", names.get(r, r), c) for r, c in raw["rows"]], raw["error"])
        try:
            return Read(raw["status"], parse_rows(self.spec.history, raw["body"]))
        except ValueError as exc:
            return Read(raw["status"], None, f"history outside the spec: {exc}")


@asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    # The lab's page is fulfilled by the browser itself (page.route), and Chromium's Local
    # Network Access checks count a document that no server sent as public: its WebSocket to
    # the app's own 127.0.0.1 origin failed with ERR_BLOCKED_BY_LOCAL_NETWORK_ACCESS_CHECKS.
    # A page the app serves is local to local and never blocked; the flag restores that.
    async with launched(args=["--disable-features=LocalNetworkAccessChecks"]) as browser:
        yield browser


def mark_dropped(sends: list[Send], dropped: list[str]) -> None:
    """A send left unanswered whose request the browser dropped as the machine's network
    changed (``dropped``: those requests' bodies) says so in its reason: the checker makes its
    trial unknown (lab.model.checker), as it does a chaos trial's whose driver saw the same."""
    for s in sends:
        if s.status is None and NETWORK_CHANGED not in s.reason and any(cut.carries(b, s.text) for b in dropped):
            s.reason = f"{s.reason} ({NETWORK_CHANGED})".lstrip()
