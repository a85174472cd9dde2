"""Pooled browser contexts: a context and its page, reused trial after trial (a new context
and page cost Chromium a renderer process each, most of a trial's CPU). One pool for both
runners' trials: `lab chaos` keeps a fixed number open (its slots), `lab investigate` opens them
as its trials need them."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from playwright.async_api import Browser, BrowserContext, Page

from lab.common.wait import bounded

CLOSE_TIMEOUT_S = 10.0  # a context that will not close is left to the browser's own close


@dataclass
class Slot:
    """A browser context and its page, reused trial after trial (see ChatDriver.open)."""

    ctx: BrowserContext
    page: Page
    broken: bool = False  # a trial saw it fail: not trusted again

    @classmethod
    async def new(cls, browser: Browser, base_url: str, trace: bool) -> "Slot":
        ctx = await browser.new_context(base_url=base_url)
        if trace:
            await ctx.tracing.start(snapshots=True, screenshots=False)
        return cls(ctx, await ctx.new_page())


class Pool:
    """Slots taken by a trial and put back after it. ``size``: that many kept open (a broken
    one is replaced; a trial waits for a free one); None: opened as trials need them. ``reset``:
    what makes a slot fit for the next trial as it is put back (False: it is not, and is closed)."""

    def __init__(
        self,
        make: Callable[[], Awaitable[Slot]],
        size: int | None = None,
        reset: Callable[[Slot], Awaitable[bool]] | None = None,
    ) -> None:
        self.make, self.size, self.reset = make, size, reset
        self._free: asyncio.Queue[Slot] = asyncio.Queue()

    async def fill(self) -> None:
        """Open ``size`` slots, side by side (one after another cost a second at 8)."""
        for slot in await asyncio.gather(*(self.make() for _ in range(self.size or 0))):
            self._free.put_nowait(slot)

    async def take(self) -> Slot:
        if self.size is None and self._free.empty():
            return await self.make()
        return await self._free.get()

    async def put(self, slot: Slot) -> None:
        if not slot.broken and (self.reset is None or await self.reset(slot)):
            self._free.put_nowait(slot)
            return
        await bounded(slot.ctx.close(), CLOSE_TIMEOUT_S)
        if self.size is not None:
            self._free.put_nowait(await self.make())

    async def close(self, closing: Callable[[Awaitable[None]], Awaitable[None]] | None = None) -> None:
        """Close the free slots (``closing``: how a close that may fail is awaited)."""
        while not self._free.empty():
            ctx = self._free.get_nowait().ctx
            await (closing(ctx.close()) if closing is not None else bounded(ctx.close(), CLOSE_TIMEOUT_S))
