from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    # Debian's Chromium: Playwright's own browser download is not possible here. Set for this
    # project's e2e tests only (a pytest11 plugin must not change it for everyone).
    return {**browser_type_launch_args, "executable_path": "/usr/bin/chromium"}
