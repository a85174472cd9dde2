"""The app's own page (lab.investigate.browser.app_page): a form's post/redirect/get is answered
by the page the redirect led to -- followed as the page follows it, the redirected request
waited for where it does not exist yet -- and a role named by one of an element's classes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from playwright.async_api import Error as PlaywrightError

from lab.common.html_select import role_value
from lab.investigate.browser.forms import redirected as _redirected


class Req:
    def __init__(self, answer: "Resp | None" = None) -> None:
        self.redirected_to: Req | None = None
        self.redirected_from: Req | None = None
        self.answer = answer

    async def response(self) -> "Resp | None":
        return self.answer


class Resp:
    def __init__(self, status: int, request: Req, url: str = "http://127.0.0.1/c/abc") -> None:
        self.status, self.request, self.url = status, request, url
        request.answer = self


class Page:
    """Issues the redirected request only once the lab waits for it (it did not exist yet)."""

    def __init__(self, later: Req) -> None:
        self.later, self.waited = later, 0

    def expect_request(self, predicate: Any, timeout: float) -> Any:
        page = self

        class Waiting:
            async def __aenter__(self) -> Any:
                page.waited += 1
                fut: asyncio.Future[Req] = asyncio.get_running_loop().create_future()
                assert predicate(page.later), "the waiter must take the request redirected from the 303's"
                fut.set_result(page.later)
                self.value = fut
                return self

            async def __aexit__(self, *exc: Any) -> None:
                return None

        return Waiting()


def _chain(final_status: int | None) -> tuple[Resp, Req]:
    first = Req()
    posted = Resp(303, first, "http://127.0.0.1/c/abc/say")
    second = Req()
    second.redirected_from = first
    if final_status is not None:
        Resp(final_status, second)
    return posted, second


def test_a_303_is_answered_by_the_page_it_leads_to_whether_or_not_its_request_exists_yet() -> None:
    posted, second = _chain(200)
    posted.request.redirected_to = second  # already issued
    page = Page(second)
    got = asyncio.run(_redirected(page, posted, 5))  # type: ignore[arg-type]
    assert (got.status, page.waited) == (200, 0)
    posted, second = _chain(200)  # not issued yet: waited for
    page = Page(second)
    got = asyncio.run(_redirected(page, posted, 5))  # type: ignore[arg-type]
    assert (got.status, page.waited) == (200, 1)


def test_a_redirect_whose_request_failed_is_no_answer() -> None:
    posted, second = _chain(None)
    posted.request.redirected_to = second
    with pytest.raises(PlaywrightError, match="HTTP 303, and the request it redirected to failed"):
        asyncio.run(_redirected(Page(second), posted, 5))  # type: ignore[arg-type]


def test_a_role_is_one_of_an_elements_classes_on_the_page_as_in_the_servers_html() -> None:
    roles = ("you", "assistant")
    assert role_value("line you", "class", roles) == "you"
    assert role_value("line assistant fresh", "class", roles) == "assistant"
    assert role_value("line", "class", roles) == "line"  # none of them: left as it is, unmatched
    assert role_value(" user ", "data-role", ("user", "bot")) == "user"


def test_a_page_opened_afresh_forgets_its_last_trials_form() -> None:
    """The pool hands a page to the next trial: its last trial's form page must not be where the
    next trial's refresh goes."""
    from lab.investigate.browser import forms

    page = Page(Req())
    forms.back[page] = "http://127.0.0.1/c/last-trials"  # type: ignore[index]
    forms.sending[page] = "http://127.0.0.1/c/last-trials"  # type: ignore[index]
    forms.forget(page)  # type: ignore[arg-type]
    assert page not in forms.back and page not in forms.sending
