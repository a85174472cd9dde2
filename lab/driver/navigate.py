"""Page navigations that outlast a change of the machine's network interfaces.

Chromium fails a navigation in flight with ``net::ERR_NETWORK_CHANGED`` when an interface comes
or goes -- a Docker engine creating a bridge or a veth for a container, a VPN: the machine's
business, not the app's. Seen in a loaded run beside the compose tests: a trial's page load
failed so, and the trial was unknown for the driver's error. The navigation is a page load (a
GET of the page, idempotent), so it is tried again, up to TRIES times. Chromium sometimes reports
such a failed load not by its net error but as the navigation "interrupted by another navigation
to chrome-error://chromewebdata/" (its own error page): seen once in a fresh-clone CI run, a
trial's first page load of the built-in service beside the compose tests' engine, the trial
unknown. The same load, the same retry. So too a load "interrupted by another navigation to" the
very URL it was going to (Chromium loading it again itself after the network changed: seen once
in a fresh-clone CI run, 2026-12-07, the app's own page's first load in a contract check beside
the compose tests). Any other failure is the app's or the lab's and is raised at once; a load
that fails every try is raised too (a page that navigates to itself on every load fails so)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import TypeVar

from playwright.async_api import Error as PlaywrightError

from lab.model.checker import NETWORK_CHANGED

T = TypeVar("T")
TRIES = 3
ERROR_PAGE = 'interrupted by another navigation to "chrome-error://chromewebdata/"'
_AGAIN = re.compile(r'Navigation to "([^"]+)" is interrupted by another navigation to "\1"')


def _machines(exc: PlaywrightError) -> bool:
    """A failed load that is the machine's network, not the app: tried again."""
    text = str(exc)
    return any(m in text for m in (NETWORK_CHANGED, ERROR_PAGE)) or _AGAIN.search(text) is not None


async def steady(navigation: Callable[[], Awaitable[T]]) -> T:
    for attempt in range(1, TRIES + 1):
        try:
            return await navigation()
        except PlaywrightError as exc:
            if not _machines(exc) or attempt == TRIES:
                raise
    raise AssertionError("unreachable")
