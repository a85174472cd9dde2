"""What one run of the runner observes and reuses, made once at its start and closed at its
end: the backend's events, Redis's expiry events and commands, the browser and its pooled
contexts (lab.driver.slots)."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from playwright.async_api import Browser

from lab.driver.browser import executable as browser_executable
from lab.driver.browser import playwright_started
from lab.runner.observe import ExpiredKeys, RedisCommands
from lab.driver.slots import Pool, Slot
from lab.stack import Stack
from lab.stack.events import BackendEvents


@dataclass
class RunContext:
    events: BackendEvents
    expired: ExpiredKeys
    commands: RedisCommands
    browser: Browser
    slots: Pool  # the run's browser contexts, as many as trials at once


@asynccontextmanager
async def opened(stack: Stack, slots: int, trace: bool, out_dir: Path) -> AsyncIterator[RunContext]:
    """Everything a run needs, up; on the way out (also on a signal) closed in reverse."""
    events = BackendEvents(stack.backend_log)
    # Playwright's tracing keeps a temporary folder per context: in the run's own folder,
    # removed below (in /tmp, every run left one per context behind).
    traces = out_dir / ".playwright-traces"
    try:
        with ExpiredKeys(stack.cfg.redis_url) as expired, RedisCommands(stack.cfg.redis_url) as commands:
            async with playwright_started() as pw:
                browser = await pw.chromium.launch(executable_path=browser_executable(), traces_dir=str(traces))
                try:
                    url = stack.cfg.chat_url
                    pool = Pool(lambda: Slot.new(browser, url, trace=trace), size=slots)
                    await pool.fill()
                    yield RunContext(events, expired, commands, browser, pool)
                finally:
                    await browser.close()
    finally:
        events.close()
        shutil.rmtree(traces, ignore_errors=True)
