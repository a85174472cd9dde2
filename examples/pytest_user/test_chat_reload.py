"""A user's own pytest-playwright test of their chat page, as such tests are written: chat a few
turns, reload, expect the messages. Nothing in it knows the lab. Run it against the app behind
the lab's Toxiproxy, repeated and judged by the lab's checker:

    pytest examples/pytest_user --lab-target examples/foreign-app.toml --lab-trials 5

The second test names a fault (the plugin's marker, applied by its lab_fault fixture); the
first is plain pytest-playwright."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

TURNS = 3


def chat(page: Page, turns: int) -> None:
    page.goto("/")
    expect(page.locator("body[data-loaded='1']")).to_be_attached()
    for i in range(turns):
        page.fill("#msg", f"hello number {i} from a user test")
        page.click("#send")
        expect(page.locator("body[data-idle='1']")).to_be_attached()


def test_the_chat_survives_a_reload(page: Page) -> None:
    chat(page, TURNS)
    page.reload()
    expect(page.locator("#messages li.msg")).to_have_count(2 * TURNS)


@pytest.mark.fault("latency", latency_ms=300)
def test_the_chat_survives_a_reload_on_a_slow_redis(page: Page, lab_fault: str) -> None:
    chat(page, TURNS)
    page.reload()
    expect(page.locator("#messages li.msg")).to_have_count(2 * TURNS)


def test_a_reload_right_after_the_answer(page: Page, lab_chat: object) -> None:
    """The one change for the lab's refresh point: the last message sent through lab_chat's
    helper, which reloads the page the moment the answer is in (skipped without --lab-target)."""
    chat(page, TURNS - 1)
    page.fill("#msg", "the last message, reloaded at once")
    lab_chat.reload_after_answer(page, lambda: page.click("#send"))  # type: ignore[attr-defined]
    expect(page.locator("#messages li.msg")).to_have_count(2 * TURNS)


def test_the_chat_survives_a_browser_restart(page: Page, lab_chat: object) -> None:
    """lab_chat's browser restart: a new context keeping only what a browser keeps (persistent
    cookies, localStorage), at the same URL."""
    chat(page, TURNS)
    after = lab_chat.restart_browser(page)  # type: ignore[attr-defined]
    expect(after.locator("#messages li.msg")).to_have_count(2 * TURNS)
    assert lab_chat.verdict().validity == "valid"  # type: ignore[attr-defined]
