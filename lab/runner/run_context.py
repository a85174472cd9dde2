"""What one run of the runner reuses, made once at its start and closed at its end: the browser
and its pooled contexts (lab.driver.slots). What a run observes of the system under test is its
client's (lab.runner.client)."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from playwright.async_api import Browser

from lab.driver.browser import launched
from lab.driver.slots import Pool, Slot
from lab.stack import Stack


@dataclass
class RunContext:
    browser: Browser
    slots: Pool  # the run's browser contexts, as many as trials at once


@asynccontextmanager
async def opened(stack: Stack, slots: int, trace: bool, out_dir: Path) -> AsyncIterator[RunContext]:
    """Everything a run needs, up; on the way out (also on a signal) closed in reverse."""
    # Playwright's tracing keeps a temporary folder per context: in the run's own folder,
    # removed below (in /tmp, every run left one per context behind).
    traces = out_dir / ".playwright-traces"
    try:
        async with launched(traces_dir=traces) as browser:
            url = stack.cfg.chat_url
            pool = Pool(lambda: Slot.new(browser, url, trace=trace), size=slots)
            await pool.fill()
            yield RunContext(browser, pool)
    finally:
        shutil.rmtree(traces, ignore_errors=True)
