"""UI tests of fastapi_chat's own page (examples/fastapi_chat.py, examples/fastapi_page.html): a
login through the API, then the page, which opens a conversation, moves its URL to /c/<id>
(replaceState) and chats over its WebSocket. Nothing here knows the lab; under it they are
recorded from the socket's frames and judged:

    CHAT_USER=ada CHAT_PASSWORD=... pytest examples/fastapi_chat_ui_tests --lab-target examples/fastapi-page.toml"""

from __future__ import annotations

import os

import pytest
from playwright.sync_api import Page, expect


@pytest.fixture
def chat(page: Page) -> Page:
    login = {"username": os.environ["CHAT_USER"], "password": os.environ["CHAT_PASSWORD"]}
    assert page.request.post("/api/login", data=login).ok
    page.goto("/")
    expect(page.locator("#send")).to_be_enabled()
    return page


def say(page: Page, text: str) -> None:
    page.get_by_label("Message").fill(text)
    page.locator("#send").click()
    expect(page.locator("body[data-idle='1']")).to_be_attached()


def test_the_messages_are_there_after_a_reload(chat: Page) -> None:
    for n, text in enumerate(("first question", "second question"), 1):
        say(chat, text)
        expect(chat.locator("#messages li.msg")).to_have_count(2 * n)
    chat.reload()
    expect(chat.locator("#messages li.msg")).to_have_count(4)


def test_a_message_while_the_store_refuses_writes(chat: Page, inject) -> None:  # type: ignore[no-untyped-def]
    say(chat, "before the outage")
    inject("write_refused")
    say(chat, "during the outage")
    chat.reload()
    expect(chat.locator("body[data-loaded='1']")).to_be_attached()
