"""The app's own page whose history GET the browser failed (no answer at all): the read says
the browser's reason at once, not "made no GET" after the whole wait; and where that reason is
the machine's network changing (Chromium fails every request in flight as an interface comes
or goes: Docker making a bridge), the page is loaded again and its next read is the one taken.

Against the stdlib app of test_send_then_reload (real Chromium, no Redis). The browser's
failure is made with Playwright's route.abort; a changed network cannot be made so, so the
second test stands the reset's reason in for it."""

from __future__ import annotations

from playwright.async_api import Route
import pytest

from lab.investigate.browser import app_page
from lab.investigate.browser.pages import chromium
from tests.helpers import run_async
from tests.integration.lab.investigate.test_send_then_reload import _App, _spec, app  # noqa: F401

RESET = "net::ERR_CONNECTION_RESET"


async def _load(app: _App, aborts: int) -> dict[str, object]:  # noqa: F811
    """The page at / loaded with its first ``aborts`` history GETs failed by the browser."""
    spec = _spec(app, "/")
    left = [aborts]

    async def cut(route: Route) -> None:
        if route.request.method == "GET" and left[0] > 0:
            left[0] -= 1
            await route.abort("connectionreset")
        else:
            await route.continue_()

    async with chromium() as browser:
        ctx = await browser.new_context()
        page = await ctx.new_page()
        await page.route(f"**{spec.history.path}*", cut)
        try:
            return dict(await app_page.load(page, spec, lambda: page.goto(spec.url("/"))))
        finally:
            await ctx.close()


def test_a_history_get_the_browser_failed_is_named(app: _App) -> None:  # noqa: F811
    read = run_async(_load(app, aborts=5))
    assert read["rows"] is None and read["status"] is None
    assert f"GET {_spec(app, '/').history.path} failed in the browser: {RESET}" in str(read["error"]), read


def test_a_read_failed_as_the_network_changed_is_taken_again_from_a_reload(
    app: _App,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(app_page, "NETWORK_CHANGED", RESET)  # the reset stands in for the machine's change
    app.rows = ["bot:ok", "user:hi"]
    read = run_async(_load(app, aborts=1))
    assert read["error"] is None and read["status"] == 200, read
    assert app.log == ["GET"]  # the aborted GET never reached the app; the reload's did
