"""A user's pytest-playwright test of examples/node/relay.js's page (relay.html), written as such
tests are: ask, wait for the answer to show, reload, expect the thread. With RELAY_REPLY=poll the
message is answered 202 and the page polls the thread until the reply shows. Under the lab:

    pytest examples/node/relay_ui_tests --lab-target examples/node-relay-poll.toml --lab-trials 3
"""

from __future__ import annotations

from playwright.sync_api import Page, expect


def ask(page: Page, text: str, replies: int) -> None:
    page.fill("#prompt", text)
    page.click("#go")
    expect(page.locator("#log .turn[data-by=assistant]")).to_have_count(replies)
    expect(page.locator("body[data-busy]")).to_have_count(0)


def test_the_thread_is_there_after_a_reload(page: Page) -> None:
    page.goto("/")
    expect(page.locator("body[data-ready=yes]")).to_have_count(1)
    for i in range(3):
        ask(page, f"tell me about relay number {i}", i + 1)
    page.reload()
    expect(page.locator("#log .turn")).to_have_count(6)
