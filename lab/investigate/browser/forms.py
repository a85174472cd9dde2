"""The app's own page when it is a form ([page] over HTTP, no script of its own sending): the
form's POST makes the page its answer. Post/redirect/get leads back to the conversation's page,
which answers the send; an answer rendered from the POST itself (an error page, an app showing
the conversation from the POST) stays the page, and a reload of it would post the form again.
Used by lab.investigate.browser.app_page (the sends, the loads) and app_reload."""

from __future__ import annotations

import weakref
from collections.abc import Callable

from playwright.async_api import Error as PlaywrightError, Page, Request, Response

from lab.driver.navigate import steady
from lab.investigate.spec.parse import PageSpec

# Pages whose document is the answer to a form's POST, no redirect after it (a 500 page, an app
# rendering the conversation from the POST itself), with the address of the page the form was
# on. Reloading one posts the form again -- the lab sending the message a second time; its URL
# is the form's action, not the conversation. The user, asked to resend, declines and goes back
# to the conversation's page: the lab GETs that page's address.
back: "weakref.WeakKeyDictionary[Page, str]" = weakref.WeakKeyDictionary()
# Pages with a send under way, with the address it was typed on.
sending: "weakref.WeakKeyDictionary[Page, str]" = weakref.WeakKeyDictionary()


def forget(page: Page) -> None:
    """``page`` opened afresh (a trial's first load): no earlier form's page to go back to."""
    back.pop(page, None)
    sending.pop(page, None)


async def reload(page: Page) -> Response | None:
    """The user's refresh of ``page``: its document again, never a form sent again -- and, with
    the form's POST still in flight, the form's page (a reload would be aborted by the POST's
    own navigation; the user's refresh leaves the POST to the app)."""
    form_page = back.pop(page, None)
    if form_page is not None:
        return await page.goto(form_page)
    try:
        return await page.reload()
    except PlaywrightError as exc:
        # The POST's request event had not reached the lab yet (a loaded machine): its navigation
        # took the reload over. Where a send is under way, its form's page, as above.
        if (from_page := sending.get(page)) is None or "ERR_ABORTED" not in str(exc):
            raise
        return await page.goto(from_page)


async def off_an_answer_page(page: Page, pg: PageSpec) -> None:
    """Before typing: a page left on a POST's answer with no message box (an error page) is left
    for the form's page, as the user goes back to type again; one that shows the box stays."""
    form_page = back.get(page)
    if form_page is not None and await page.query_selector(pg.input) is None:
        del back[page]
        await steady(lambda: page.goto(form_page))


async def redirected(page: Page, resp: Response, timeout_s: float) -> Response:
    """The answer a redirect led to, as the page follows it (the lab's page's fetch follows it
    too; pytest --lab-target: lab.investigate.plugin.exchanges.after_redirects). The redirected
    request may not exist yet when the redirect is answered: waited for, within the chat's
    timeout. Raises PlaywrightError where it failed or never came."""
    req = resp.request
    while 300 <= resp.status < 400:
        nxt = req.redirected_to
        if nxt is None:  # checked and waited for with no await between: its event cannot slip by
            async with page.expect_request(_redirect_of(req), timeout=timeout_s * 1000) as got:
                pass
            nxt = await got.value
        answered = await nxt.response()
        if answered is None:
            raise PlaywrightError(f"HTTP {resp.status}, and the request it redirected to failed")
        resp, req = answered, nxt
    return resp


def _redirect_of(prev: Request) -> Callable[[Request], bool]:
    return lambda r: r.redirected_from is prev
