"""Settings of the plain loop: Debian's Chromium, and the profile under test in a header."""

from __future__ import annotations

import os
from typing import Any

import pytest


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    return {**browser_type_launch_args, "executable_path": "/usr/bin/chromium"}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict[str, Any]) -> dict[str, Any]:
    return {**browser_context_args, "extra_http_headers": {"X-Lab-Defects": os.environ.get("BENCH_DEFECTS", "")}}
