"""Which Chromium the lab drives.

By default Debian's `chromium-headless-shell`: the same Chromium build as the full browser, the
headless shell Playwright itself uses for headless runs, lighter per page (no browser UI) --
reloading the chat page and reading its history took 47 ms against 74 ms with the full
`chromium` (60 reloads each, same machine). It records traces and takes screenshots like the
full browser. `LAB_BROWSER=chromium` runs the full browser instead (e.g. to compare, or where
only it is installed)."""

from __future__ import annotations

import os
from pathlib import Path

from lab.common.errors import UsageError

BROWSERS = {"headless-shell": Path("/usr/bin/chromium-headless-shell"), "chromium": Path("/usr/bin/chromium")}
DEFAULT = "headless-shell"


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
