"""lab init on a server-rendered chat: the page's forms, the messages' selector, the speakers."""

from __future__ import annotations

import pytest

from lab.common.html_select import html_items
from lab.investigate.draft import html_page, session
from lab.investigate.draft.infer import Draft
from lab.investigate.draft.routes import Call, Routes

SENT = "chaoslab init probe 1a2b"

PAGES = {
    "classes": (
        '<div id="thread"><div class="bubble bubble--me">{s}</div><div class="bubble bubble--bot">Sure.</div></div>',
        ("div.bubble", "class", "bubble--me", "bubble--bot", ""),
    ),
    "data attribute, a label and a time around the text": (
        '<ol class="log"><li class="row" data-speaker="human"><b>You</b> <span class="body">{s}</span>'
        '<time>09:12</time></li><li class="row" data-speaker="ai"><b>Bot</b> <span class="body">Noted.</span>'
        "<time>09:12</time></li></ol>",
        ("li.row", "data-speaker", "human", "ai", ".body"),
    ),
    "no shared class: the parent's id scopes the tag": (
        '<section id="c"><p class="you">{s}</p><p class="assistant">Noted.</p></section><p>footer</p>',
        ("#c > p", "class", "you", "assistant", ""),
    ),
}


@pytest.mark.parametrize("name", PAGES)
def test_the_messages_and_the_attribute_telling_the_speakers_apart(name: str) -> None:
    markup, (items, role_field, user, assistant, content) = PAGES[name]
    body = f"<html><body><h1>Chat</h1>{markup.format(s=SENT)}</body></html>"
    shape = html_page.history(body, SENT, None)
    assert shape is not None
    assert (shape.items, shape.role_field, shape.user_role, shape.assistant_role) == (
        items,
        role_field,
        user,
        assistant,
    )
    assert (shape.content_field, shape.order) == (content, "oldest_first")
    rows = html_items(body, shape.items, shape.role_field, shape.content_field, (user, assistant))
    assert rows[0] == (user, SENT)


def test_no_reply_beside_it_or_a_label_with_no_part_for_the_text_is_no_shape() -> None:
    assert html_page.history(f"<div><p class='a'>{SENT}</p></div>", SENT, None) is None
    alone = f"<div><p class='m u'>You: {SENT}</p><p class='m b'>Bot: ok</p></div>"
    assert html_page.history(alone, SENT, None) is None
    assert html_page.history("<p>nothing</p>", SENT, None) is None


def test_the_order_from_two_messages_rendered() -> None:
    d = Draft()
    shape = html_page.history(f"<div id=l><p class='m u'>{SENT}</p><p class='m b'>ok</p></div>", SENT, None)
    assert shape is not None
    newest = "<div id=l><p class='m u'>second</p><p class='m b'>ok</p><p class='m u'>" + SENT + "</p></div>"
    assert html_page.order_of_two(d, newest, shape, SENT, "second")
    assert d.get("history", "order") == "newest_first"


def test_a_post_form_and_an_hx_post_with_the_pages_id_as_the_session() -> None:
    page = (
        '<form method="post" action="/c/8f3a9b1c2d/say"><input name="text"><input type="hidden" name="t"></form>'
        '<form action="/search"><input name="q"></form>'
        '<div hx-post="/messages"><textarea name="prompt"></textarea></div>'
    )
    routes = Routes(texts=[page], at="/c/8f3a9b1c2d")
    html_page.forms(routes)
    assert routes.forms == ["/c/{session}/say", "/messages"]
    assert routes.fields == ["text", "prompt"]
    assert Call("GET", "/c/{session}") in routes.calls and routes.page_url == "/c/{session}"


class PrgApp:
    """A server-rendered app that makes its ids: / is redirected to /c/<16 hex>, any other id 404."""

    def __init__(self) -> None:
        self.path, self.made, self.form = "/", [], False

    def text(self, path: str) -> tuple[int, str, str]:
        self.made.append(f"{len(self.made):016x}")
        self.path = f"/c/{self.made[-1]}"
        return 200, "text/html", "<ol></ol>"

    def call(self, method: str, path: str, body: object = None) -> tuple[int, str, object]:
        parts = path.split("/")  # /c/<id>/say
        taken = method == "POST" and self.form and len(parts) == 4 and parts[2] in self.made
        return (200 if taken else 404), "text/html", None


def test_an_app_that_makes_its_ids_by_redirect_is_drafted_so() -> None:
    app, d = PrgApp(), Draft()
    app.made.append("00000000000000aa")
    page = '<form method="post" action="/c/00000000000000aa/say"><textarea name="text"></textarea></form>'
    routes = Routes(texts=[page], at="/c/00000000000000aa")
    html_page.forms(routes)
    assert routes.page_url == "/c/{session}" and routes.forms == ["/c/{session}/say"]
    sid = session.page_made(app, d, routes)  # type: ignore[arg-type]  # fresh ids of the lab's: 404
    assert sid == app.made[-1] != "00000000000000aa"
    where = (d.get("session", "from"), d.get("session", "create"), d.get("session", "page_url"))
    assert where == ("redirect", "/", "/c/{session}") and d.get("chat", "path") == "/c/{session}/say"


def test_a_form_with_hidden_inputs_is_drafted_with_the_page_they_are_read_from() -> None:
    page = '<form method="post" action="/send"><input type="hidden" name="csrf_token" value="x"><textarea name="message"></textarea></form>'
    routes, d = Routes(texts=[page], at="/"), Draft()
    html_page.forms(routes)
    assert routes.hidden_from == "/"
    html_page.posted(d, routes, "/send", {"csrf_token": "x"})
    assert (d.get("chat", "body"), d.get("chat", "hidden_from")) == ("form", "/")
    html_page.posted(d2 := Draft(), routes, "/elsewhere", {"csrf_token": "x"})
    assert d2.get("chat", "body") is None


def test_the_log_is_found_past_a_sidebar_titling_the_conversation_by_its_first_message() -> None:
    body = (
        f'<main><div class="m mine">{SENT}</div><div class="m bot">Sure.</div></main>'
        f'<aside><ul><li class="conv current">{SENT}</li><li class="conv">older chat</li></ul></aside>'
    )
    shape = html_page.history(body, SENT, None)
    assert shape is not None and (shape.items, shape.user_role, shape.assistant_role) == ("div.m", "mine", "bot")


class NewChatApp:
    """A landing page with only a "New chat" button: POST /chat makes a conversation's page,
    under each of ``ids`` in turn."""

    def __init__(self, *ids: str) -> None:
        self.path, self.form, self.body, self.hidden = "/", False, "", {}  # type: ignore[var-annotated]
        self.ids = list(ids)

    def call(self, method: str, path: str, body: object = None) -> tuple[int, str, object]:
        assert (method, path, self.form) == ("POST", "/chat", True)
        made = self.ids.pop(0)
        self.path = f"/chat/{made}"
        self.body = f'<form method="post" action="/chat/{made}/messages"><textarea name="q"></textarea></form>'
        return 200, "text/html; charset=utf-8", None


@pytest.mark.parametrize(
    "ids",
    [("k3j9x2m4p7q1", "b7c2d9e4f1a8"), ("aeuykwjivhvqulbmkxca", "qzhfrtbxwnmkaplcyude")],
    ids=["with digits", "letters only: told by the second conversation"],
)
def test_a_new_chat_button_leads_to_the_page_whose_form_is_then_read(ids: tuple[str, str]) -> None:
    routes = Routes(texts=['<form method="post" action="/chat"><button>New chat</button></form>'], at="/")
    html_page.forms(routes)
    assert routes.starts == ["/chat"] and routes.forms == []
    app = NewChatApp(*ids)
    html_page.started(app, routes)  # type: ignore[arg-type]
    assert routes.forms == ["/chat/{session}/messages"] and routes.page_url == "/chat/{session}"
    assert routes.start == ("POST", "/chat") and app.form and routes.at == f"/chat/{ids[0]}"


def test_a_word_of_letters_that_stays_from_one_conversation_to_the_next_is_no_id() -> None:
    routes = Routes(texts=['<form method="post" action="/room/lobby/say"><input name="q"></form>'], at="/room/lobby")
    html_page.forms(routes)
    assert routes.forms == ["/room/lobby/say"] and routes.page_url is None
    again = Routes(texts=routes.texts, at="/room/lobby", again="/room/lobby")
    html_page.forms(again)
    assert again.forms == ["/room/lobby/say"] and again.page_url is None
    moved = Routes(texts=routes.texts, at="/room/lobby", again="/room/kitchen")
    html_page.forms(moved)
    assert moved.forms == ["/room/{session}/say"] and moved.page_url == "/room/{session}"


def test_the_headers_a_page_sends_with_a_message() -> None:
    script = 'fetch(form.action, {method: "POST", headers: {"Content-Type": "x", "X-Requested-With": "fetch", "X-CSRF-Token": t}})'
    routes = Routes(texts=['<form method="post" action="/say"><input name="q"></form>', script], at="/")
    html_page.forms(routes)
    assert routes.headers == {"X-Requested-With": "fetch"}
    htmx = Routes(texts=['<form hx-post="/m"><textarea name="p"></textarea></form>'], at="/")
    html_page.forms(htmx)
    assert htmx.headers == {"HX-Request": "true"}
