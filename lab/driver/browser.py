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
from collections.abc import AsyncIterator
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
