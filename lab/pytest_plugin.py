"""pytest plugin (entry point ``chaoslab``): stack fixtures. Thin by design: importing it has no
side effects, and a test that uses none of its fixtures is unchanged."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from lab.stack.native import NativeStack


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("chaoslab", "chaos lab for LLM chat memory")
    group.addoption("--lab-mode", default="native", choices=("native", "compose"),
                    help="how the lab stack runs (default: native)")
    group.addoption("--lab-keep-stack", action="store_true",
                    help="leave the stack running after the session (for debugging)")


@pytest.fixture(scope="session")
def lab_stack(request: pytest.FixtureRequest) -> Iterator["NativeStack"]:
    """The real stack (redis-server, toxiproxy-server, backend), up for the whole session.

    It runs in its own run folder and on the configured LAB_* ports; it is stopped at the end
    unless --lab-keep-stack is given.
    """
    from lab.errors import LabError
    from lab.stack import for_mode

    stack = for_mode(request.config.getoption("--lab-mode"))
    try:
        stack.up()
    except LabError as exc:
        pytest.fail(f"the lab stack did not come up: {exc}", pytrace=False)
    yield stack  # type: ignore[misc]
    if not request.config.getoption("--lab-keep-stack"):
        stack.down()
