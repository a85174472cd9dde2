"""What people do today: one Playwright test -- chat five turns, reload, check the history --
repeated many times (`pytest --count=60`, pytest-repeat). `lab bench` times it against the lab.

A failing repetition waits for the full expect timeout before it can say so."""

from __future__ import annotations

from playwright.sync_api import Page, expect


def test_memory_survives_refresh(page: Page) -> None:
    page.goto("/")
    box = page.get_by_test_id("composer-input")
    for i in range(5):
        box.fill(f"turn {i}: my name is Ada and I like chess")
        box.press("Enter")
        saved = page.locator('[data-testid=message][data-role=assistant][data-state="saved"]')
        expect(saved).to_have_count(i + 1)
    page.reload()
    expect(page.get_by_test_id("message")).to_have_count(10)
