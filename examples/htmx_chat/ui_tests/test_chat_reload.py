"""The htmx chat's own UI tests, as its authors keep them beside the app: ask, see each answer
appear, reload, and the whole conversation is rendered again by the server. Nothing here knows
the lab; under it they are recorded and judged:

    pytest examples/htmx_chat/ui_tests --lab-target examples/htmx.toml --lab-trials 5"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

QUESTIONS = ("what is the capital of Peru?", "and its altitude?", "is it colder than Quito?")


def ask_all(page: Page) -> None:
    page.goto("/")
    bubbles = page.locator("div.bubble")
    for n, question in enumerate(QUESTIONS, 1):
        page.get_by_placeholder("Ask something...").fill(question)
        page.get_by_role("button").click()
        expect(bubbles).to_have_count(2 * n)


def test_the_conversation_is_rendered_again_after_a_reload(page: Page) -> None:
    ask_all(page)
    page.reload()
    expect(page.locator("div.bubble")).to_have_count(2 * len(QUESTIONS))


@pytest.mark.fault("latency", latency_ms=300)
def test_the_conversation_is_rendered_again_on_a_slow_redis(page: Page, lab_fault: str) -> None:
    test_the_conversation_is_rendered_again_after_a_reload(page)
