"""OpenAPI's routes where no schema says what a message is: tried after the common ones."""

from __future__ import annotations

from lab.investigate.draft.openapi import listed
from lab.investigate.draft.routes import CHAT_PATHS, HISTORY_PATHS, Routes

DOC = {
    "paths": {
        "/v1/messages": {"post": {"responses": {"201": {}}}, "get": {"responses": {"200": {}}}},
        "/v1/conversations": {"post": {"responses": {"200": {}}}},  # the create call
        "/v1/conversations/{cid}/messages": {"post": {}},  # a parameter: the create call's below
        "/auth/login": {"post": {}},
        "/admin/flush": {"post": {}},  # named like nothing of a chat's: never posted a message
        "/ping": {"get": {}},
    }
}


def test_the_documents_chat_like_routes_without_parameters_are_listed() -> None:
    posts, gets = listed(DOC, create="/v1/conversations")
    assert posts == ["/v1/messages"] and gets == ["/v1/messages"]
    assert listed(DOC)[0] == ["/v1/messages", "/v1/conversations"]


def test_listed_routes_come_after_the_pages_and_the_common_ones() -> None:
    page = Routes(listed=listed(DOC, create="/v1/conversations"))
    assert page.chats()[: len(CHAT_PATHS)] == list(CHAT_PATHS) and "/v1/messages" in page.chats()
    assert page.histories()[-1] == "/v1/messages" and page.histories()[: len(HISTORY_PATHS)] == list(HISTORY_PATHS)
    assert page.message_fields()[-1] == "body"
