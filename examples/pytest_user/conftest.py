"""The user's own conftest: which Chromium to drive. On this machine Playwright cannot download
its browser, so the test uses Debian's (elsewhere, pytest-playwright's own is fine)."""

from __future__ import annotations

import os
from typing import Any

import pytest


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    chromium = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    return (
        {**browser_type_launch_args, "executable_path": chromium}
        if os.path.exists(chromium)
        else browser_type_launch_args
    )
