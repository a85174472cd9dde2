"""Page navigations that outlast a change of the machine's network interfaces.

Chromium fails a navigation in flight with ``net::ERR_NETWORK_CHANGED`` when an interface comes
or goes -- a Docker engine creating a bridge or a veth for a container, a VPN: the machine's
business, not the app's. Seen in a loaded run beside the compose tests: a trial's page load
failed so, and the trial was unknown for the driver's error. The navigation is a page load (a
GET of the page, idempotent), so it is tried again, up to TRIES times; any other failure is the
app's or the lab's and is raised at once."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from playwright.async_api import Error as PlaywrightError

T = TypeVar("T")
TRIES = 3
NETWORK_CHANGED = "net::ERR_NETWORK_CHANGED"


async def steady(navigation: Callable[[], Awaitable[T]]) -> T:
    for attempt in range(1, TRIES + 1):
        try:
            return await navigation()
        except PlaywrightError as exc:
            if NETWORK_CHANGED not in str(exc) or attempt == TRIES:
                raise
    raise AssertionError("unreachable")
