"""The driver (Jepsen's client): a Playwright page object over the chat page in Debian Chromium.

Async, so the runner can drive many trials at once in one browser. Each send is recorded from
the browser's own network events: invoke, then ok (2xx; for a stream, the first token) / fail
(4xx) / info (5xx, timeout, aborted). Refreshes happen on observable triggers, never timers.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, BrowserContext, Page

from lab.model.history import Row, Send
from lab.driver.concurrent_sends import ConcurrentSends
from lab.driver.netlog import NetworkLog
from lab.driver.navigate import steady
from lab.driver.page_js import BUBBLE_STATE_JS, SEND_JS, SEND_TIMEOUT_S, UNTIL_JS, settled_selector
from lab.driver.slots import Slot
from lab.common.phases import Phases
from lab.plan.schedule import CONCURRENT_POINTS
from lab.stack.events import BackendEvents

TRIGGER_TIMEOUT_S = 20.0
RETRY_BUTTON_TIMEOUT_S = 15.0  # the user looks for the retry button this long before giving up


class TriggerMissed(Exception):
    """The refresh point's trigger did not happen (e.g. the reply came before receipt was seen)."""


class WindowMissed(TriggerMissed):
    """The trigger came too late for the moment it stands for: the machine's timing, not the
    app's behaviour (the trial is unknown, and a grid may replace it: lab.expect)."""


class ChatDriver(NetworkLog, ConcurrentSends):
    def __init__(
        self,
        browser: Browser,
        base_url: str,
        headers: dict[str, str],
        events: BackendEvents,
        *,
        stream: bool = False,
        trace: bool = True,
    ) -> None:
        super().__init__()
        self.browser, self.base_url, self.headers = browser, base_url, headers
        self.events, self.stream, self.trace = events, stream, trace
        self.session_id: str | None = None
        self.contexts: list[BrowserContext] = []
        self.page: Page | None = None
        self.phase = "created"  # the step in progress: named when a trial times out
        self.timing = Phases()  # where this trial's time goes (lab bench's breakdown)
        self._unsettled: Send | None = None  # answered, not yet seen settled on the page
        self.loaded_rows: list[Row] | None = None  # the page's rows once its history loaded
        self.history_state: str | None = None  # its history status then: loaded / empty / failed
        self.tabs: list[Page] = []  # two_tabs: the second page, until closed
        self.page_of: dict[int, Page] = {}  # id(send) -> the page that sent it, if not self.page
        self.t_first_send: float | None = None  # time.monotonic() as the first send was typed

    # ------------------------------------------------------------ lifecycle
    async def open(self, cookies: list[dict[str, Any]] | None = None, slot: "Slot | None" = None) -> None:
        """Open the chat page in a fresh context -- or in ``slot``, a pooled context and page
        reused across trials (cookies cleared, headers set, a new trace chunk): a new
        context and page cost Chromium a renderer process each, most of a trial's CPU."""
        self.phase = "opening a browser context"
        with self.timing("open"):
            await self._open(cookies, slot)

    async def _open(self, cookies: list[dict[str, Any]] | None, slot: "Slot | None") -> None:
        if slot is not None:
            self.slot = slot
            # Independent steps: in flight together (one round trip of latency, not three).
            await asyncio.gather(
                slot.ctx.clear_cookies(),
                slot.ctx.set_extra_http_headers(self.headers),
                *([slot.ctx.tracing.start_chunk()] if self.trace else []),
            )
            self.contexts.append(slot.ctx)
            await self._attach(slot.page)
        else:
            ctx = await self.browser.new_context(base_url=self.base_url, extra_http_headers=self.headers)
            if self.trace:
                await ctx.tracing.start(snapshots=True, screenshots=False)
            if cookies:
                # cookies() gives Cookie dicts, add_cookies() takes SetCookieParam: the same keys
                # (Playwright types them as two TypedDicts with different optional fields).
                await ctx.add_cookies(cookies)  # type: ignore[arg-type]
            self.contexts.append(ctx)
            await self._attach(await ctx.new_page())
        if self.session_id is None:
            self.session_id = await self.cookie_session_id()

    def _listen(self, page: Page) -> None:
        """Record this page's chat requests (the first page, a second tab)."""
        page.on("request", self._on_request)
        page.on("response", self._on_response)
        page.on("requestfailed", self._on_failed)

    async def _attach(self, page: Page) -> None:
        self._listen(page)
        self.page = page
        self.phase = "loading the page"
        self._note("load")
        await steady(lambda: page.goto("/?stream=1" if self.stream else "/"))
        await self.wait_history_loaded()

    def _detach(self, page: Page) -> None:
        page.remove_listener("request", self._on_request)
        page.remove_listener("response", self._on_response)
        page.remove_listener("requestfailed", self._on_failed)

    async def close_tabs(self) -> None:
        """Close the second tabs (before the refresh: the user goes back to the first one)."""
        for tab in self.tabs:
            self._detach(tab)
            try:
                await tab.close()
            except Exception:  # already gone with its context
                pass
        self.tabs.clear()

    async def close(self, trace_dir: Path | None = None) -> None:
        """End the trial's use of the browser. Traces are written to ``trace_dir`` (None:
        discarded). A pooled context stays open for the next trial, with the page it ends on."""
        slot = getattr(self, "slot", None)
        await self.close_tabs()  # a trial that broke off before its refresh left one open
        for i, ctx in enumerate(self.contexts):
            path = str(trace_dir / f"trace-{i + 1}.zip") if trace_dir else None
            try:
                if slot is not None and ctx is slot.ctx:
                    if self.trace:
                        await ctx.tracing.stop_chunk(path=path)
                    for page in ctx.pages:
                        self._detach(page)
                    slot.page = ctx.pages[-1] if ctx.pages else await ctx.new_page()
                    for page in ctx.pages[:-1]:
                        await page.close()
                else:
                    if self.trace:
                        await ctx.tracing.stop(path=path)
                    await ctx.close()
            except Exception:  # a context already closed by browser_restart
                if slot is not None and ctx is slot.ctx:
                    slot.broken = True
        self.contexts.clear()

    async def set_headers(self, headers: dict[str, str]) -> None:
        """Change the lab headers for the sends that follow (e.g. a slower stream)."""
        assert self.page is not None
        self.headers = headers
        await self.page.context.set_extra_http_headers(headers)

    # ------------------------------------------------------------ actions
    async def send(self, text: str, turn: int) -> Send:
        """Type the message and press Enter, as a user would; returns the in-flight send."""
        assert self.page is not None
        page = self.page
        self.phase = f"sending turn {turn}"
        # The page picks the message id and shows its bubble before the POST leaves: the same
        # round trip that submits returns it.
        after = self._unsettled
        self._unsettled, self.loaded_rows = None, None
        t0 = time.perf_counter()
        if self.t_first_send is None:
            self.t_first_send = time.monotonic()
        mid, waited_ms = await page.evaluate(
            SEND_JS, [text, settled_selector(after.id) if after else "", int(SEND_TIMEOUT_S * 1000)]
        )
        self._note("send", turn=turn)
        self.timing.add("settle", waited_ms / 1000)
        self.timing.add("send", max(0.0, time.perf_counter() - t0 - waited_ms / 1000))
        if not mid:
            raise RuntimeError(f"turn {turn}: the page showed no new message after the submit")
        return self._register(Send(str(mid), text, turn))

    async def retry(self, failed: Send) -> Send | None:
        """The user's retry: the page's retry button (the message's, or its reply's where only
        the reply was cut), re-sending the same message id. None: the page offers none (the
        message shown saved, or not shown), so a user would not retry; what it showed is noted."""
        assert self.page is not None
        # The page marks the message once its fetch settles, a moment after the network event
        # the driver saw; on a loaded 2-core runner that took over 5 s (2026-12-06).
        handle = await self.page.wait_for_function(
            BUBBLE_STATE_JS, arg=failed.id, timeout=RETRY_BUTTON_TIMEOUT_S * 1000
        )
        state = await handle.json_value()
        if state != "not-saved":
            self._note("no-retry", id=failed.id, state=state)
            return None
        self._note("retry", id=failed.id)
        self._unsettled = None
        button = self.page.locator(f'[data-testid=message][data-id="{failed.id}"] [data-testid=retry-button]')
        await button.first.click(timeout=RETRY_BUTTON_TIMEOUT_S * 1000)
        return self._register(Send(failed.id, failed.text, failed.turn, retry_of=failed.id))

    async def acked(self, s: Send, timeout_s: float = SEND_TIMEOUT_S) -> bool:
        """Wait for the send's outcome (for a stream: its first token). True if it completed."""
        with self.timing("ack"):
            return await self._acked(s, timeout_s)

    async def _acked(self, s: Send, timeout_s: float) -> bool:
        done = asyncio.ensure_future(self._done[id(s)].wait())
        waits: set[asyncio.Future[Any]] = {done}
        if self.stream:
            # A stream is acknowledged by its first token on the page, seen the moment it shows.
            first = f'[data-testid=message][data-role=assistant][data-id="{s.id}"]'
            seen = asyncio.ensure_future(self.until(first, timeout_s))
            seen.add_done_callback(lambda f: f.cancelled() or f.exception())  # a reload ends it
            waits.add(seen)
        try:
            await asyncio.wait(waits, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
            if self.stream and s.outcome is None and seen.done() and not seen.cancelled() and seen.exception() is None:
                s.complete("ok", self._status.get(id(s), 200), "first token", time.time())
                self._done[id(s)].set()
        finally:
            for w in waits:
                w.cancel()
        return s.outcome is not None

    async def answered(self, s: Send, timeout_s: float = SEND_TIMEOUT_S) -> None:
        """Wait for the send's outcome; the next ``send`` first waits, on the page, until the
        page shows this one settled (a user types the next message once the reply is there)."""
        self.phase = f"waiting for turn {s.turn}'s answer"
        if await self.acked(s, timeout_s) and not (s.outcome is not None and s.status is None):
            self._unsettled = s

    async def settled(self, s: Send, timeout_s: float = SEND_TIMEOUT_S) -> None:
        """Wait until the page shows the send settled: its reply saved, or the message not saved."""
        assert self.page is not None
        self.phase = f"waiting for turn {s.turn} to settle"
        if not await self.acked(s, timeout_s):
            return
        if s.outcome is not None and s.status is None:
            return  # aborted: the page that sent it is gone
        with self.timing("settle"):
            await self.until(settled_selector(s.id), timeout_s, page=self.page_of.get(id(s)))

    async def until(self, selector: str, timeout_s: float, page: Page | None = None) -> list[Row]:
        """Until ``selector`` matches on the page (an error naming it after ``timeout_s``); the
        rows the page shows at that moment (and the history's status in ``history_state``)."""
        assert self.page is not None
        rows, state = await (page or self.page).evaluate(UNTIL_JS, [selector, int(timeout_s * 1000)])
        if page is None:
            self.history_state = state
        return [Row(i, r) for i, r, _state in rows]

    async def _hold(self, delay_ms: int, at_age_ms: int) -> None:
        """A window sweep's pause before the refresh, as a user's: ``delay_ms`` from now (the
        answer has just come), or until ``at_age_ms`` after the first send (the conversation's
        age). It is the behaviour being measured, not a wait for a condition."""
        wait_s = delay_ms / 1000
        if at_age_ms and self.t_first_send is not None:
            wait_s = max(wait_s, self.t_first_send + at_age_ms / 1000 - time.monotonic())
        if wait_s > 0:
            self.phase = f"holding the refresh {wait_s * 1000:.0f} ms"
            with self.timing("hold"):
                await asyncio.sleep(wait_s)

    async def refresh(self, point: str, last: Send, delay_ms: int = 0, at_age_ms: int = 0) -> None:
        """Refresh at ``point`` relative to the last send (design: refresh points); a window
        sweep's ``delay_ms`` after an after_ack trigger, or not before ``at_age_ms``."""
        assert self.page is not None
        self.phase = f"refreshing at {point}"
        if point == "in_flight":
            with self.timing("trigger"):
                # Woken by the backend's log (not polled): receipt logged, or the answer came.
                received = lambda: self.events.count("chat.received", last.id) > 0  # noqa: E731
                if not await self.events.wait_until(lambda: received() or last.outcome is not None, TRIGGER_TIMEOUT_S):
                    raise TriggerMissed(
                        f"trigger not seen within {TRIGGER_TIMEOUT_S:g} s: receipt logged before the reply"
                    )
                if not received():
                    raise WindowMissed("in_flight window missed: the reply came before its receipt was seen")
            await self._reload()
        elif point in ("after_ack", "mid_stream"):
            if not await self.acked(last, TRIGGER_TIMEOUT_S):
                raise TriggerMissed("the last send was never acknowledged")
            if point == "mid_stream" and last.outcome != "ok":
                raise TriggerMissed(f"no first token: {last.reason}")
            await self._hold(delay_ms, at_age_ms)
            await self._reload()
        elif point in ("settled", *CONCURRENT_POINTS):
            # two_tabs / double_submit: the runner made the last turn's sends; every one of them
            # settles (each on its own page), the second tab closes, this page reloads.
            for s in [x for x in self.sends if x.turn == last.turn]:
                await self.settled(s)
            await self.close_tabs()
            await self._hold(delay_ms, at_age_ms)
            await self._reload()
        elif point == "reopen":
            await self.settled(last)
            self._note("refresh", how="reopen")
            old = self.page
            with self.timing("refresh"):
                await self._attach(await old.context.new_page())
            self._detach(old)
            await old.close()
        elif point == "browser_restart":
            await self.settled(last)
            if self.session_id is None:
                # The session the restart forgets: the runner's fallback when the backend's
                # events do not name it (the new browser's cookie, if any, is another session).
                self.session_id = await self.cookie_session_id()
            ctx = self.page.context
            # A browser restart keeps only persistent cookies (those with an expiry).
            keep = [c for c in await ctx.cookies() if c.get("expires", -1) != -1]
            self._note("refresh", how="browser_restart", kept_cookies=[c["name"] for c in keep])
            await self.open(cookies=keep)  # type: ignore[arg-type]  # Cookie dicts as above
        else:
            raise ValueError(point)

    async def _reload(self) -> None:
        assert self.page is not None
        self._note("refresh", how="reload")
        with self.timing("refresh"):
            await steady(self.page.reload)
            await self.wait_history_loaded()

    # ------------------------------------------------------------ reads
    async def wait_history_loaded(self) -> None:
        self.loaded_rows = await self.until('[data-testid=history-status]:not([data-state="loading"])', SEND_TIMEOUT_S)

    async def read_page(self) -> list[Row]:
        """What the page shows: right after a refresh, the rows it showed once its history had
        loaded (read in that same round trip)."""
        assert self.page is not None
        self.phase = "reading the page"
        if self.loaded_rows is not None:
            return self.loaded_rows
        with self.timing("read_page"):
            return await self.until("", SEND_TIMEOUT_S)  # no condition: the rows at once

    async def cookie_session_id(self) -> str | None:
        assert self.page is not None
        for c in await self.page.context.cookies():
            if c["name"] == "session_id":
                return c["value"]
        return None

    async def screenshot(self) -> bytes | None:
        try:
            return await self.page.screenshot() if self.page else None
        except Exception:
            return None
