"""A navigation that failed only because the machine's network changed (or that Chromium reports
as its own error page) is tried again; anything else is raised."""

from __future__ import annotations

import asyncio

import pytest
from playwright.async_api import Error as PlaywrightError

from lab.driver.navigate import TRIES, steady


def _failing(errors: list[str]) -> tuple[list[int], object]:
    calls: list[int] = []

    async def nav() -> str:
        calls.append(1)
        if errors:
            raise PlaywrightError(errors.pop(0))
        return "loaded"

    return calls, nav


def test_a_network_change_is_tried_again() -> None:
    calls, nav = _failing(["Page.goto: net::ERR_NETWORK_CHANGED at http://127.0.0.1:1/"] * (TRIES - 1))
    assert asyncio.run(steady(nav)) == "loaded" and len(calls) == TRIES  # type: ignore[arg-type]


def test_a_load_chromium_reports_as_its_error_page_is_tried_again() -> None:
    err = 'Page.goto: Navigation to "http://127.0.0.1:1/" is interrupted by another navigation to "chrome-error://chromewebdata/"'
    calls, nav = _failing([err])
    assert asyncio.run(steady(nav)) == "loaded" and len(calls) == 2  # type: ignore[arg-type]


def test_a_load_interrupted_by_a_load_of_the_same_url_is_tried_again_and_one_elsewhere_is_not() -> None:
    """Seen in a fresh-clone CI run (2026-12-07): the app's own page's first load "interrupted by
    another navigation to" its own URL -- Chromium loading it again itself. A navigation to
    another URL (the app's own script moving the page) is the app's, raised at once."""
    same = (
        'Page.goto: Navigation to "http://127.0.0.1:1/" is interrupted by another navigation to "http://127.0.0.1:1/"'
    )
    calls, nav = _failing([same])
    assert asyncio.run(steady(nav)) == "loaded" and len(calls) == 2  # type: ignore[arg-type]
    moved = 'Page.goto: Navigation to "http://127.0.0.1:1/" is interrupted by another navigation to "http://127.0.0.1:1/login"'
    calls, nav = _failing([moved])
    with pytest.raises(PlaywrightError, match="login"):
        asyncio.run(steady(nav))  # type: ignore[arg-type]
    assert len(calls) == 1


def test_any_other_failure_is_raised_at_once() -> None:
    calls, nav = _failing(["Page.goto: net::ERR_CONNECTION_REFUSED at http://127.0.0.1:1/"])
    with pytest.raises(PlaywrightError, match="CONNECTION_REFUSED"):
        asyncio.run(steady(nav))  # type: ignore[arg-type]
    assert len(calls) == 1


def test_a_network_that_keeps_changing_fails_after_the_tries() -> None:
    calls, nav = _failing(["net::ERR_NETWORK_CHANGED"] * TRIES)
    with pytest.raises(PlaywrightError):
        asyncio.run(steady(nav))  # type: ignore[arg-type]
    assert len(calls) == TRIES
