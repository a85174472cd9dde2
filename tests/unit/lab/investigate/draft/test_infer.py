"""lab init's inferences from what an app answered, and the draft as a spec file: each guess
from its evidence, None where the evidence does not decide, and a rendered draft that parses."""

from __future__ import annotations

import importlib.util
import sys
import tomllib
from pathlib import Path

import pytest

from lab.investigate.spec import parse as sp
from lab.investigate.draft.infer import (
    Draft,
    HistoryShape,
    answer_id,
    end_event,
    history_shape,
    key_glob,
    key_pattern,
    pick_cookie,
    reply_path,
)
from lab.investigate.draft.openapi import from_openapi
from lab.investigate.draft.init import render

ROOT = Path(__file__).resolve().parents[5]
SENT = "chaoslab init probe 1a2b"


def test_reply_path_prefers_reply_names_and_skips_the_message_sent() -> None:
    assert reply_path({"message": SENT, "reply": "hi", "id": "x"}, SENT) == ("$.reply", "hi")
    assert reply_path({"answer": "yes"}, SENT) == ("$.answer", "yes")
    assert reply_path({"data": {"content": "deep"}}, SENT) == ("$.data.content", "deep")
    assert reply_path({"echo": SENT}, SENT) is None and reply_path([1], SENT) is None


def test_history_shape_of_objects_oldest_first() -> None:
    doc = [{"role": "user", "content": SENT}, {"role": "assistant", "content": "hi"}]
    assert history_shape(doc, SENT, "hi") == HistoryShape("$", "objects")


def test_history_shape_of_arrays_their_places_its_fields() -> None:
    """[role, text] arrays (a Flask app written unseen, 2026-12-06), and Gradio-style [question,
    reply] pairs: read as objects whose fields are the places."""
    doc = {"log": [["user", SENT], ["assistant", "hi"]]}
    got = history_shape(doc, SENT, "hi")
    assert got == HistoryShape("$.log", "objects", role_field="0", content_field="1"), got
    pairs = history_shape([[SENT, "Hello! How can I help?"]], SENT, "Hello! How can I help?")
    assert pairs is not None and (pairs.format, pairs.content_field, pairs.reply_field) == ("pairs", "0", "1"), pairs


def test_history_shape_of_newest_first_strings_under_a_field() -> None:
    doc = {"messages": ["bot:hi there", f"user:{SENT}"]}
    got = history_shape(doc, SENT, "hi there")
    assert got == HistoryShape("$.messages", "strings", order="newest_first", assistant_role="bot")


def test_history_shape_needs_the_message_and_a_role() -> None:
    assert history_shape({"messages": []}, SENT, None) is None
    assert history_shape([{"content": SENT}], SENT, None) is None  # no role field: not decided


def test_a_history_of_turns_each_item_its_question_and_its_reply() -> None:
    """{"prompt", "reply"} items and no role field: the reply's field holds the reply where it is
    known, else is the one of a reply's name (null until stored); neither told: not decided."""
    doc = {"log": [{"id": "k1", "prompt": SENT, "reply": "Sure thing.", "at": "2026-12-05T10:00:00Z"}]}
    assert history_shape(doc, SENT, "Sure thing.") == HistoryShape("$.log", "pairs", "", "prompt", reply_field="reply")
    assert history_shape({"turns": [{"q": SENT, "answer": None}]}, SENT, None) == HistoryShape(
        "$.turns", "pairs", "", "q", reply_field="answer"
    )
    assert history_shape([{"q": SENT, "note": "long text here", "extra": "more text"}], SENT, None) is None
    assert history_shape([{"q": SENT, "reply": "a", "answer": "a"}], SENT, "a") is None


def test_a_role_field_of_the_apps_own_name_is_its_one_other_short_word() -> None:
    """{"who": "human", "text": ...}: no role name the lab knows, but the item's one other field
    of one short word is the role; two such fields do not decide."""
    doc = {"items": [{"who": "human", "text": SENT}, {"who": "ai", "text": "Echo: hi"}]}
    got = history_shape(doc, SENT, "Echo: hi")
    assert got == HistoryShape("$.items", "objects", "who", "text", user_role="human", assistant_role="ai")
    assert history_shape([{"who": "human", "mood": "calm", "text": SENT}], SENT, None) is None
    assert history_shape([{"note": "a long sentence here", "text": SENT}], SENT, None) is None


def test_the_role_word_beside_an_entry_id_or_a_kind_all_items_share() -> None:
    """A stream entry's id beside the speaker (seen on a Fastify app whose history lists
    {"seq", "speaker", "content", "at"}): the word of letters is the role; a kind both items
    share is not; two words that both differ do not decide."""
    doc = {
        "entries": [
            {"seq": "1796503953412-0", "speaker": "person", "content": SENT, "at": "2026-12-05T20:52:33.411Z"},
            {"seq": "1796503953735-0", "speaker": "model", "content": "Hmm", "at": "2026-12-05T20:52:33.734Z"},
        ]
    }
    got = history_shape(doc, SENT, "Hmm")
    assert got == HistoryShape("$.entries", "objects", "speaker", "content", user_role="person", assistant_role="model")
    shared = [{"kind": "msg", "by": "me", "body": SENT}, {"kind": "msg", "by": "bot", "body": "Hmm"}]
    assert history_shape(shared, SENT, "Hmm") == HistoryShape(
        "$", "objects", "by", "body", assistant_role="bot", user_role="me"
    )
    both = [{"tone": "calm", "by": "me", "body": SENT}, {"tone": "warm", "by": "bot", "body": "Hmm"}]
    assert history_shape(both, SENT, "Hmm") is None


def test_the_conversations_id_in_a_first_answer() -> None:
    assert answer_id({"conversation_id": "c0ffee", "output": "hi"}) == ("$.conversation_id", "c0ffee")
    assert answer_id({"threadId": "t-1", "reply": "hi"}) == ("$.threadId", "t-1")
    assert answer_id({"conversation": {"id": "9"}, "answer": "x"}) == ("$.conversation.id", "9")
    assert answer_id({"conversation": "abc", "answer": "x"}) == ("$.conversation", "abc")
    assert answer_id({"chat": "Hello there!"}) is None  # a reply, not an id
    assert answer_id({"id": "msg-1", "reply": "hi"}) is None  # a message's id says nothing of a conversation
    assert answer_id(["x"]) is None


def test_key_pattern_is_the_one_key_named_after_the_session() -> None:
    assert key_pattern(["chat:abc123", "other"], "abc123") == "chat:{session}"
    assert key_pattern(["chat:abc123", "chat:abc123:ids"], "abc123") is None  # two: not decided
    assert key_pattern(["chat:zzz"], "abc123") is None
    assert key_pattern(["u:ada1:conv:1"], "1") == "u:ada1:conv:{session}"  # the id's whole part
    assert key_pattern(["thr:{ab12}:log"], "ab12") == "thr:{{session}}:log"


def test_key_glob_stars_the_parts_that_read_as_ids() -> None:
    assert key_glob("c:3f2a9c0e1b4d4e7f8a9b0c1d2e3f4a5b") == "c:*"  # a uuid's hex
    assert key_glob("u:ada:thread:42:log") == "u:ada:thread:*:log"  # a counter
    assert key_glob("history/Zx_aQ-bcDEfgHIjkLM") == "history/*"  # a token_urlsafe
    assert key_glob("conversation_history:main") is None  # words, no id


def test_pick_cookie_named_like_a_session_or_the_only_one() -> None:
    assert pick_cookie(["csrftoken", "session_id"]) == "session_id"
    assert pick_cookie(["x"]) == "x" and pick_cookie(["a", "b"]) is None


def _fastapi_openapi(monkeypatch: pytest.MonkeyPatch) -> dict:  # type: ignore[type-arg]
    """The FastAPI example's own document, generated by FastAPI (no server, no Redis)."""
    for k, v in {"REDIS_URL": "redis://127.0.0.1:1/0", "PORT": "1", "CHAT_USER": "a", "CHAT_PASSWORD": "b"}.items():
        monkeypatch.setenv(k, v)
    spec = importlib.util.spec_from_file_location("fastapi_chat_doc", ROOT / "examples" / "fastapi_chat.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "fastapi_chat_doc", mod)
    spec.loader.exec_module(mod)
    return mod.app.openapi()  # type: ignore[no-any-return]


def test_openapi_gives_the_login_the_create_call_and_the_routes(monkeypatch: pytest.MonkeyPatch) -> None:
    d = Draft()
    from_openapi(_fastapi_openapi(monkeypatch), d)
    assert d.sections["auth"] == {
        "login": "/api/login",
        "body": {"username": "{env:LAB_LOGIN_USERNAME}", "password": "{env:LAB_LOGIN_PASSWORD}"},
        "token": "$.token",
    }
    assert d.sections["session"] == {"in": "path", "from": "create", "create": "/api/conversations", "id": "$.id"}
    assert d.sections["chat"] == {
        "path": "/api/conversations/{session}/messages",
        "message_field": "content",
        "reply_path": "$.reply",
    }
    assert d.sections["history"] == {"path": "/api/conversations/{session}/messages", "items": "$.messages"}
    assert not d.unknown and all(d.why[k] for k in d.why)


def test_a_streams_own_last_event_once_in_it() -> None:
    sse = 'event: start\ndata: {}\n\nevent: delta\ndata: {"t": "a"}\n\nevent: delta\ndata: {}\n\nevent: end\ndata: {"n": 2}\n\n'
    assert end_event(sse) == "event: end"
    assert end_event("event: delta\ndata: a\n\nevent: delta\ndata: b\n\n") is None  # every event alike
    assert end_event('data: {"delta": "a "}\n\ndata: {"delta": "b"}\n\ndata: [DONE]\n\n') == "data: [DONE]"
    assert end_event('data: {"delta": "a "}\n\ndata: {"delta": "b"}\n\n') is None
    ndjson = '{"kind":"token","t":"a"}\n{"kind":"token","t":"b"}\n{"kind":"done","tokens":2}\n'
    assert end_event(ndjson) == '"kind":"done"' and end_event("Sure, here is a plain reply.") is None


def test_a_drafted_end_event_renders_and_parses_back(tmp_path: Path) -> None:
    d = Draft()
    for section, key, value in (
        ("start", "command", "node app.js"),
        ("http", "port", 18000),
        ("http", "cookie", "sid"),
        ("chat", "path", "/api/chat"),
        ("history", "path", "/api/history"),
        ("stream", "request", {}),
        ("stream", "end", '"kind":"done"'),
    ):
        d.put(section, key, value, "")
    out = tmp_path / "x.toml"
    out.write_text(render("x", d, []))
    stream = sp.load(out).stream
    assert stream is not None and stream.end == '"kind":"done"' and stream.request == {}


def test_a_rendered_draft_parses_and_marks_what_is_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LAB_LOGIN_USERNAME", "ada")
    monkeypatch.setenv("LAB_LOGIN_PASSWORD", "pw-123456")
    d = Draft()
    d.put("start", "command", "{python} app.py", "")
    d.put("start", "cwd", ".", "")
    d.put("start", "env", {"REDIS_URL": "{redis_url}"}, "")
    d.put("http", "port", 18000, "")
    from_openapi(_fastapi_openapi(monkeypatch), d)
    text = render("x", d, ["a header"])
    out = tmp_path / "x.toml"
    out.write_text(text)
    s = sp.load(out)
    assert s.session.carrier == "path" and s.auth is not None and s.chat.message_field == "content"
    assert "# OpenAPI: POST /api/login takes username, password" in text
    d.missing("redis", "key", "the key")
    assert "# key = ?   # COULD NOT INFER: the key" in render("x", d, [])
    assert tomllib.loads(render("x", d, []))["redis"] == {}


def test_an_openapi_create_call_whose_answer_is_not_described_is_drafted_for_the_probe() -> None:
    """A FastAPI view returning a dict has no response schema: the create call is drafted from
    its shape (a POST with no body continued by routes with a parameter), its id left to the
    probe's real call; its chat then follows in the path."""
    doc = {
        "paths": {
            "/api/conversations": {"post": {"responses": {"200": {}}}},
            "/api/conversations/{cid}/messages": {
                "post": {
                    "parameters": [{"name": "cid", "in": "path", "schema": {"type": "integer"}}],
                    "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/M"}}}},
                    "responses": {"200": {}},
                },
                "get": {"responses": {"200": {}}},
            },
        },
        "components": {"schemas": {"M": {"properties": {"text": {"type": "string"}}}}},
    }
    d = Draft()
    from_openapi(doc, d)
    assert d.get("session", "create") == "/api/conversations" and d.get("session", "id") is None
    assert d.get("chat", "path") == "/api/conversations/{session}/messages" and d.get("chat", "message_field") == "text"


def test_a_number_is_an_id_where_it_is_named_one_never_a_word_beside_it() -> None:
    from lab.investigate.draft.session import made_id

    assert made_id({"id": 7}) == ("$.id", "7") and answer_id({"thread_id": 3}) == ("$.thread_id", "3")
    assert made_id({"room": "5f8c2a", "idle_ttl": 2700}) == ("$.room", "5f8c2a")  # a TTL's seconds: no id
    assert answer_id({"conversation_id": True}) is None
