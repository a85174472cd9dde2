"""UI tests of the Socket.IO chat (examples/node/sio_page.js): each message an event on the page's
socket, the reply streamed back in fragments. Nothing here knows the lab; under it they are
recorded from the socket's frames and judged:

    pytest examples/node/sio_ui_tests --lab-target examples/node-sio-page.toml --lab-trials 5"""

from __future__ import annotations

from typing import Callable

from playwright.sync_api import Page, expect


class TestStreamingChat:
    def ask(self, page: Page, line: str) -> None:
        page.get_by_placeholder("Say something").fill(line)
        page.get_by_role("button", name="Send").click()

    def test_two_replies_are_there_after_a_reload(self, page: Page) -> None:
        page.goto("/")
        for n, line in enumerate(("hi there", "tell me about tides"), 1):
            self.ask(page, line)
            expect(page.locator("div.msg.a:not(.pending)")).to_have_count(n)
        page.reload()
        expect(page.locator("div.msg")).to_have_count(4)

    def test_the_store_turns_read_only_while_a_reply_streams(self, page: Page, inject: Callable[..., str]) -> None:
        """The user is told whatever the app tells them; the lab judges whether it was true."""
        page.goto("/")
        self.ask(page, "what is a monad?")
        expect(page.locator("div.msg.a.pending")).to_have_count(1)  # the reply has begun
        inject("write_refused")
        expect(page.locator("div.msg.a.pending")).to_have_count(0)

    def test_a_reload_after_three_questions_raises_nothing(self, page: Page) -> None:
        """A smoke test: three questions and a reload, which must not fail. It asks nothing of
        the history, which the page reads after it loads."""
        page.goto("/")
        for n, line in enumerate(("hello again", "what is a tide pool?", "thanks"), 1):
            self.ask(page, line)
            expect(page.locator("div.msg.a:not(.pending)")).to_have_count(n)
        page.reload()
