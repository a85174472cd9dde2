"""A user's pytest-playwright tests of examples/node/relay.js's page (relay.html), written as such
tests are: ask, wait for the answer to show, reload, expect the thread. The message is answered
202 and the reply streams on an EventSource of its turn ([stream] follow) -- or, with
RELAY_REPLY=poll, the page polls the thread until it shows ([chat] reply_from). Under the lab:

    pytest examples/node/relay_ui_tests --lab-target examples/node-relay.toml --lab-trials 3
    pytest examples/node/relay_ui_tests --lab-target examples/node-relay-poll.toml -k after_a_reload
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.sync_api import Page, expect


def opened(page: Page) -> None:
    page.goto("/")
    expect(page.locator("body[data-ready=yes]")).to_have_count(1)


def ask(page: Page, text: str, replies: int) -> None:
    page.fill("#prompt", text)
    page.click("#go")
    expect(page.locator("#log .turn[data-by=assistant]")).to_have_count(replies)
    expect(page.locator("body[data-busy]")).to_have_count(0)


def test_the_thread_is_there_after_a_reload(page: Page) -> None:
    opened(page)
    for i in range(3):
        ask(page, f"tell me about relay number {i}", i + 1)
    page.reload()
    expect(page.locator("#log .turn")).to_have_count(6)


@pytest.mark.fault("latency", latency_ms=300, stream="upstream")
def test_the_thread_is_there_on_a_slow_store(page: Page, lab_fault: str) -> None:
    opened(page)
    for i in range(2):
        ask(page, f"slowly now, relay number {i}", i + 1)
    page.reload()
    expect(page.locator("#log .turn")).to_have_count(4)


def test_a_reload_in_the_middle_of_a_reply_keeps_the_question(page: Page) -> None:
    opened(page)
    ask(page, "a first question to the relay", 1)
    page.fill("#prompt", "a second one, cut by a reload")
    page.click("#go")
    expect(page.locator("#log .turn[data-by=assistant]").nth(1)).not_to_be_empty()  # the reply has begun
    page.reload()
    expect(page.locator("#log .turn[data-by=me]")).to_have_count(2)


def test_a_store_hiccup_loses_no_answered_question(page: Page, inject: Callable[..., str]) -> None:
    """The store refuses one write (the next one, whichever it is) after a first turn: the page
    either says the question failed or keeps it after a reload."""
    opened(page)
    ask(page, "a first question before the hiccup", 1)
    inject("write_refused", at="write")
    ask(page, "a second question as the store hiccups", 2)
    failed = "Something went wrong" in page.locator("#log .turn[data-by=assistant]").nth(1).inner_text()
    page.reload()
    expect(page.locator("#log .turn[data-by=me]")).to_have_count(1 if failed else 2)
