"""The driver's two send patterns that are not one message at a time: two tabs of one browser
context sending at once, and a double submit (one message, one id, twice in one task)."""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from playwright.async_api import Page

from lab.model.history import Row, Send
from lab.driver.navigate import steady
from lab.driver.page_js import DOUBLE_JS, SEND_JS, SEND_TIMEOUT_S, UNTIL_JS, settled_selector
from lab.common.phases import Phases


class _Driver(Protocol):
    """What these methods use of ChatDriver: its page, network log and timing."""

    page: Page | None
    stream: bool
    phase: str
    timing: Phases
    tabs: list[Page]
    page_of: dict[int, Page]
    _unsettled: Send | None
    loaded_rows: list[Row] | None

    def _listen(self, page: Page) -> None: ...
    def _note(self, kind: str, **fields: Any) -> None: ...
    def _register(self, *sends: Send) -> Send: ...
    async def until(self, selector: str, timeout_s: float, page: Page | None = None) -> list[Row]: ...


class ConcurrentSends:
    """Mixed into ChatDriver."""

    _unsettled: Send | None
    loaded_rows: list[Row] | None

    async def send_two_tabs(self: _Driver, text: str, other: str, turn: int, gap_ms: int = 0) -> list[Send]:
        """The last turn from two tabs: a second page of the same context (same cookies) opens
        the conversation, then both pages submit at nearly the same moment (two evaluate calls
        in flight together: Chromium runs them one after the other in the site's renderer) --
        or, in a window sweep, the second tab ``gap_ms`` after the first.
        Returns [this page's send, the other tab's send]."""
        assert self.page is not None
        self.phase = f"opening a second tab for turn {turn}"
        after = self._unsettled
        self._unsettled, self.loaded_rows = None, None
        if after is not None:
            await self.until(settled_selector(after.id), SEND_TIMEOUT_S)
        with self.timing("open"):
            tab = await self.page.context.new_page()
            self._listen(tab)
            self.tabs.append(tab)
            self._note("load", tab=2)
            await steady(lambda: tab.goto("/?stream=1" if self.stream else "/"))
            await tab.evaluate(
                UNTIL_JS, ['[data-testid=history-status]:not([data-state="loading"])', int(SEND_TIMEOUT_S * 1000)]
            )
        self.phase = f"sending turn {turn} from two tabs"

        async def second() -> Any:
            if gap_ms:  # the user's pause between the two tabs: the variable being swept
                await asyncio.sleep(gap_ms / 1000)
            return await tab.evaluate(SEND_JS, [other, "", int(SEND_TIMEOUT_S * 1000)])

        with self.timing("send"):
            (a, _), (b, _) = await asyncio.gather(
                self.page.evaluate(SEND_JS, [text, "", int(SEND_TIMEOUT_S * 1000)]), second()
            )
        self._note("send", turn=turn, tabs=2)
        if not a or not b:
            raise RuntimeError(f"turn {turn}: a tab showed no new message after the submit")
        mine, theirs = Send(str(a), text, turn), Send(str(b), other, turn)
        self._register(mine, theirs)
        self.page_of[id(theirs)] = tab
        return [mine, theirs]

    async def double_submit(self: _Driver, text: str, turn: int) -> list[Send]:
        """The last turn submitted twice from this page within the same task (a double click):
        the same text under the same id. Returns both sends (one id)."""
        assert self.page is not None
        self.phase = f"double-submitting turn {turn}"
        after = self._unsettled
        self._unsettled, self.loaded_rows = None, None
        with self.timing("send"):
            mid, waited_ms = await self.page.evaluate(
                DOUBLE_JS, [text, settled_selector(after.id) if after else "", int(SEND_TIMEOUT_S * 1000)]
            )
        self._note("send", turn=turn, double=True)
        self.timing.add("settle", waited_ms / 1000)
        if not mid:
            raise RuntimeError(f"turn {turn}: the page showed no new message after the double submit")
        first, second = Send(str(mid), text, turn), Send(str(mid), text, turn)
        self._register(first, second)
        return [first, second]
