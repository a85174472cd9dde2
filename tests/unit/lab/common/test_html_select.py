"""The messages of a server-rendered page: the selector subset, optional end tags, the text."""

from __future__ import annotations

import pytest

from lab.common.html_select import document, hidden_inputs, html_items, select, selector

PAGE = """<!doctype html><html><head><title>t</title><script>var x = "<div class='msg'>no</div>";</script></head>
<body><main id="log">
  <div class="msg msg--me" data-at="1">Hi &amp; <em>there</em></div>
  <div class="msg msg--bot" data-at="2"><p>Hello<br>again</p></div>
</main>
<ul class="lines"><li class="line you">one<li class="line assistant">two <b>bold</b></ul>
<section><p data-speaker="user"><span class="t">q1</span> <time>09:12</time></p>
<p data-speaker="bot"><span class=t>a1</span></section>
<form method="post" action="/say"><textarea name="text"></textarea><input type="hidden" name="csrf" value="x"></form>
</body></html>"""


def test_classes_and_a_child_combinator_pick_the_messages_in_document_order() -> None:
    got = html_items(PAGE, "#log > .msg", "class", "", ("msg--me", "msg--bot"))
    assert got == [("msg--me", "Hi & there"), ("msg--bot", "Hello again")]


def test_a_group_keeps_document_order_and_script_text_is_no_message() -> None:
    got = html_items(PAGE, ".msg--bot, .msg--me", "class", "", ("msg--me", "msg--bot"))
    assert [t for _, t in got] == ["Hi & there", "Hello again"]


def test_an_optional_end_tag_still_gives_one_element_a_message() -> None:
    assert html_items(PAGE, "ul.lines li", "class", "", ("you", "assistant")) == [
        ("you", "one"),
        ("assistant", "two bold"),
    ]


def test_a_data_attribute_names_the_speaker_and_a_part_holds_the_text() -> None:
    got = html_items(PAGE, "section p[data-speaker]", "data-speaker", ".t", ("user", "bot"))
    assert got == [("user", "q1"), ("bot", "a1")]


def test_a_message_without_the_named_part_is_an_error_naming_it() -> None:
    with pytest.raises(ValueError, match="no '.nothing' inside"):
        html_items(PAGE, "#log > .msg", "class", ".nothing", ())


@pytest.mark.parametrize(
    ("sel", "count"),
    [
        ("[data-at]", 2),
        ('[data-at="2"]', 1),
        ("[class~=msg--me]", 1),
        ("[class^=msg]", 2),
        ("[data-at$='1']", 1),
        ("*.t", 2),
    ],
)
def test_attribute_operators(sel: str, count: int) -> None:
    assert len(select(document(PAGE), selector(sel))) == count


@pytest.mark.parametrize("bad", ["li:first-child", "> li", "li >", "a,,b", "ul ~ li"])
def test_a_selector_outside_the_subset_is_refused_by_name(bad: str) -> None:
    with pytest.raises(ValueError):
        selector(bad)


def test_the_hidden_inputs_of_the_form_holding_the_message_field() -> None:
    page = (
        '<form action="/search"><input type="hidden" name="page" value="1"><input name="q"></form>'
        '<form method="post" action="/send"><input type="hidden" name="csrf_token" value="t0k">'
        '<input type="hidden" name="conv" value="c-9"><textarea name="message"></textarea></form>'
    )
    assert hidden_inputs(page, "message") == {"csrf_token": "t0k", "conv": "c-9"}
    assert hidden_inputs("<form method=post><input name=x></form>") == {}


def test_a_pages_meta_tags_by_name() -> None:
    from lab.common.html_select import metas

    page = '<head><meta charset="utf-8"><meta name="csrf-token" content="a+b/="><meta name=viewport content=x></head>'
    assert metas(page) == {"csrf-token": "a+b/=", "viewport": "x"}
