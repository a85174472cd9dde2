"""Which Chromium the lab drives.

By default Debian's `chromium-headless-shell`: the same Chromium build as the full browser, the
headless shell Playwright itself uses for headless runs, lighter per page (no browser UI) --
reloading the chat page and reading its history took 47 ms against 74 ms with the full
`chromium` (60 reloads each, same machine). It records traces and takes screenshots like the
full browser. `LAB_BROWSER=chromium` runs the full browser instead (e.g. to compare, or where
only it is installed)."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Awaitable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from lab.common.errors import UsageError
from lab.common.files import owned_tmp, sweep_tmp

BROWSERS = {"headless-shell": Path("/usr/bin/chromium-headless-shell"), "chromium": Path("/usr/bin/chromium")}
DEFAULT = "headless-shell"
TMP_PREFIX = "chaoslab-browser-"  # playwright_started's folders, named for the run's pid


def choice(env: dict[str, str] | None = None) -> str:
    name = (os.environ if env is None else env).get("LAB_BROWSER", DEFAULT)
    if name not in BROWSERS:
        raise UsageError(f"LAB_BROWSER={name!r} is not a browser the lab drives", f"valid: {', '.join(BROWSERS)}")
    return name


def executable(env: dict[str, str] | None = None) -> str:
    """The chosen browser's path; the full chromium when the shell is not installed (the
    verdicts do not depend on which one runs)."""
    name = choice(env)
    path = BROWSERS[name]
    if not path.exists() and name == DEFAULT and BROWSERS["chromium"].exists():
        return str(BROWSERS["chromium"])
    if not path.exists():
        raise UsageError(f"{path} is missing", "run `make setup` (as root) to install it")
    return str(path)


@asynccontextmanager
async def playwright_started() -> AsyncIterator[Any]:
    """``async_playwright()`` whose driver keeps its temporary folders (its artifacts folder,
    Chromium's profile) in a folder of the lab's own, removed on the way out however the run
    ends: a driver hit by a Ctrl-C to the whole group can die before removing its own (the
    interrupt storm, CI 2026-12-03: 1 of 10 interruptions left two). TMPDIR is the lab's only
    while the driver starts -- a process the lab starts later (a restarted backend) keeps the
    caller's."""
    from playwright.async_api import async_playwright

    sweep_tmp(TMP_PREFIX)  # a killed run's (lab down sweeps them too)
    folder = owned_tmp(TMP_PREFIX)
    try:
        manager = async_playwright()
        before = os.environ.get("TMPDIR")
        os.environ["TMPDIR"] = str(folder)
        try:
            pw = await manager.__aenter__()
        finally:
            if before is None:
                os.environ.pop("TMPDIR", None)
            else:
                os.environ["TMPDIR"] = before
        try:
            yield pw
        finally:
            await manager.__aexit__(None, None, None)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@asynccontextmanager
async def launched(args: Sequence[str] = (), traces_dir: Path | None = None) -> AsyncIterator[Any]:
    """The chosen Chromium, started (``args``: its command-line flags; ``traces_dir``: where
    Playwright keeps its tracing folders) and closed however the run ends -- the one launch of
    `lab chaos`'s runner and of `lab investigate`'s."""
    async with playwright_started() as pw:
        extra = {"traces_dir": str(traces_dir)} if traces_dir is not None else {}
        browser = await pw.chromium.launch(executable_path=executable(), args=list(args), **extra)
        try:
            yield browser
        finally:
            await closing(browser.close())


async def closing(aw: Awaitable[None]) -> None:
    """Close what may be gone already. Ctrl-C in a terminal reaches the whole process group:
    Playwright's driver (a node process) exits on it, and the browser with it -- closing its
    contexts then fails, and that failure must not replace the interrupt (seen: a traceback and
    exit 1 instead of 130)."""
    from playwright.async_api import Error

    try:
        await aw
    except Error:
        pass
    except Exception as exc:  # the driver's pipe closed under the call: not a playwright Error
        if "Connection closed" not in str(exc):
            raise
