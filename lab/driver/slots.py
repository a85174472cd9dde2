"""Pooled browser contexts: a context and its page, reused trial after trial (a new context
and page cost Chromium a renderer process each, most of a trial's CPU)."""

from __future__ import annotations

from dataclasses import dataclass

from playwright.async_api import Browser, BrowserContext, Page


@dataclass
class Slot:
    """A browser context and its page, reused trial after trial (see ChatDriver.open)."""

    ctx: BrowserContext
    page: Page
    broken: bool = False

    @classmethod
    async def new(cls, browser: Browser, base_url: str, trace: bool) -> "Slot":
        ctx = await browser.new_context(base_url=base_url)
        if trace:
            await ctx.tracing.start(snapshots=True, screenshots=False)
        return cls(ctx, await ctx.new_page())
