"""A user's pytest-playwright tests of examples/tornado_progressive.py's page, written as such
tests are (nothing in them knows the lab): chat, reload -- once after the replies, once in the
middle of one. Under the lab:

    pytest examples/tornado_ui_tests --lab-target examples/tornado-progressive.toml --lab-trials 3
"""

from __future__ import annotations

from playwright.sync_api import Page, expect


def ask(page: Page, text: str, nth: int) -> None:
    page.fill("#q", text)
    page.click("button")
    expect(page.locator("#log li.assistant").nth(nth)).to_contain_text("all.")


def test_the_chat_is_there_after_a_reload(page: Page) -> None:
    page.goto("/")
    for i in range(3):
        ask(page, f"question {i} about the weather", i)
    page.reload()
    expect(page.locator("#log li")).to_have_count(6)


def test_a_reload_in_the_middle_of_a_reply_keeps_the_question(page: Page) -> None:
    page.goto("/")
    ask(page, "what is a list", 0)
    page.fill("#q", "and what is a hash")
    page.click("button")
    expect(page.locator("#log li.assistant").nth(1)).to_contain_text("said")  # the reply has begun
    page.reload()
    expect(page.locator("#log li.user")).to_have_count(2)
