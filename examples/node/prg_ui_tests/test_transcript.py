"""UI tests of the post/redirect/get chat (examples/node/prg.js) in Python, as a QA team keeps
them for an app in another language: a plain form, each message a POST answered 303 back to the
conversation's page. Nothing here knows the lab; under it they are recorded and judged:

    pytest examples/node/prg_ui_tests --lab-target examples/node-prg.toml --lab-trials 5"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

LINES = ("good morning", "what day is it?", "and tomorrow?")


def say(page: Page, line: str) -> None:
    page.get_by_placeholder("Type a message").fill(line)
    page.get_by_role("button", name="Send").click()


def test_the_transcript_is_there_after_a_reload(page: Page) -> None:
    page.goto("/")  # a new conversation: redirected to /c/<id>
    for n, line in enumerate(LINES, 1):
        say(page, line)
        expect(page.locator("li.line")).to_have_count(2 * n)
    page.reload()
    expect(page.locator("li.line")).to_have_count(2 * len(LINES))


@pytest.mark.fault("write_refused")
def test_a_line_said_while_the_store_refuses_writes(page: Page, lab_fault: str) -> None:
    """Whatever the page shows, the user must not be told a line was kept that was not."""
    page.goto("/")
    say(page, "is anyone there?")
    expect(page.locator("main")).to_be_visible()
