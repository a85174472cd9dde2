"""The HTTP contract of the running backend (through the chat proxy), and every bad input: a
JSON error, no traceback, nothing stored."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator

import pytest
import redis
import requests

from lab.stack.events import BackendEvents
from lab.stack.native import NativeStack
from lab.stack.toxiproxy import Toxiproxy

from .conftest import Chat


def test_page_has_the_selectors_the_lab_drives(lab_stack: NativeStack) -> None:
    resp = requests.get(lab_stack.cfg.chat_url + "/", timeout=30)
    assert resp.status_code == 200 and resp.headers["Content-Type"].startswith("text/html")
    for testid in ("chat-log", "composer-input", "send-button", "history-status", "stream-toggle"):
        assert f'data-testid="{testid}"' in resp.text
    js = requests.get(lab_stack.cfg.chat_url + "/static/chat.js", timeout=30)
    assert js.status_code == 200 and "retry-button" in js.text


def test_chat_reply_and_history_contract(chat: Callable[..., Chat]) -> None:
    c = chat()
    r1 = c.send("hi, my name is Grace", mid="m-1")
    assert r1.status_code == 200
    body = r1.json()
    assert set(body) == {"reply", "id", "session_id"}
    assert body["id"] == "m-1" and body["session_id"] == c.sid
    assert body["reply"] == "Nice to meet you, Grace! What would you like to talk about?"
    cookie = r1.headers["Set-Cookie"]
    assert re.search(r"session_id=[0-9a-f]{32}", cookie)
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Max-Age=" in cookie
    c.send("what is my name?", mid="m-2")
    history = c.s.get(c.base + "/history", timeout=30).json()
    assert history == [
        {"id": "m-1", "role": "user", "content": "hi, my name is Grace"},
        {"id": "m-1", "role": "assistant", "content": body["reply"]},
        {"id": "m-2", "role": "user", "content": "what is my name?"},
        {"id": "m-2", "role": "assistant", "content": "Your name is Grace."},
    ]


def test_message_id_is_generated_when_absent(lab_stack: NativeStack) -> None:
    resp = requests.post(lab_stack.cfg.chat_url + "/chat", json={"message": "hello"}, timeout=30)
    assert resp.status_code == 200 and re.fullmatch(r"[0-9a-f]{32}", resp.json()["id"])


def test_streamed_reply_arrives_token_by_token(chat: Callable[..., Chat]) -> None:
    c = chat(token_delay_ms=0)
    resp = c.send("my name is Hal", stream=True)
    assert resp.headers["Content-Type"].startswith("application/x-ndjson")
    events = [json.loads(line) for line in resp.iter_lines() if line]
    assert events[0]["type"] == "start" and events[-1]["type"] == "end"
    tokens = [e["text"] for e in events if e["type"] == "token"]
    assert len(tokens) > 3 and "".join(tokens) == events[-1]["reply"]
    assert [r["role"] for r in c.stored()] == ["user", "assistant"]


@pytest.mark.parametrize("cookie", ["../../etc", "chat:*", "A" * 32, "0" * 31, "*"])
def test_malformed_cookie_starts_a_new_session(
    lab_stack: NativeStack, redis_direct: "redis.Redis[bytes]", cookie: str
) -> None:
    resp = requests.post(
        lab_stack.cfg.chat_url + "/chat", json={"message": "hello"}, cookies={"session_id": cookie}, timeout=30
    )
    assert resp.status_code == 200
    sid = resp.json()["session_id"]
    assert sid != cookie and re.fullmatch(r"[0-9a-f]{32}", sid)
    assert redis_direct.exists(f"chat:{cookie}") == 0
    assert redis_direct.exists(f"chat:{sid}") == 1


def _sid_of(key: bytes) -> str:
    return key.decode().split(":")[1]


@pytest.fixture
def no_new_keys(lab_stack: NativeStack, redis_direct: "redis.Redis[bytes]") -> Iterator[None]:
    """Nothing new in Redis but what accepted messages wrote. The worker's backend is shared:
    an earlier test's late write (fire_and_forget) may land during this one, so a new key counts
    against the refused request unless its session is one the backend logged a message for
    (a refused request is turned away before ``chat.received``)."""
    before = set(redis_direct.scan_iter("chat:*"))
    yield
    new = set(redis_direct.scan_iter("chat:*")) - before
    accepted = BackendEvents(lab_stack.backend_log, from_start=True)
    accepted.poll()
    received = {str(e["sid"]) for e in accepted.all if e.get("event") == "chat.received" and e.get("sid")}
    assert {k for k in new if _sid_of(k) not in received} == set(), "a refused request stored something"


BAD_INPUTS = [
    # (id, kwargs for requests.post, status, error code)
    ("non-json", {"data": "{not json", "headers": {"Content-Type": "application/json"}}, 400, "bad_json"),
    ("array", {"json": [1, 2]}, 400, "bad_body"),
    (
        "wrong-type",
        {"data": "message=hi", "headers": {"Content-Type": "application/x-www-form-urlencoded"}},
        415,
        "unsupported_media_type",
    ),
    ("no-type", {"data": b'{"message": "hi"}'}, 415, "unsupported_media_type"),
    ("missing", {"json": {}}, 400, "bad_message"),
    ("empty", {"json": {"message": "   "}}, 400, "bad_message"),
    ("not-string", {"json": {"message": 42}}, 400, "bad_message"),
    ("too-large", {"json": {"message": "x" * (8 * 1024 + 1)}}, 413, "message_too_large"),
    ("body-too-large", {"json": {"message": "x", "pad": "y" * 70_000}}, 413, "request_entity_too_large"),
    ("bad-id", {"json": {"message": "hi", "id": "has space"}}, 400, "bad_id"),
    ("bad-stream", {"json": {"message": "hi", "stream": "yes"}}, 400, "bad_stream"),
    (
        "unknown-defect",
        {"json": {"message": "hi"}, "headers": {"X-Lab-Defects": "fire_and_forget,nope"}},
        400,
        "unknown_defect",
    ),
    ("bad-ttl", {"json": {"message": "hi"}, "headers": {"X-Lab-Ttl-Ms": "soon"}}, 400, "bad_header"),
    ("bad-model", {"json": {"message": "hi"}, "headers": {"X-Lab-Model": "gpt"}}, 400, "bad_header"),
]


@pytest.mark.parametrize("kwargs, status, code", [b[1:] for b in BAD_INPUTS], ids=[b[0] for b in BAD_INPUTS])
@pytest.mark.usefixtures("no_new_keys")
def test_bad_input_gets_a_json_error_and_stores_nothing(
    lab_stack: NativeStack, kwargs: dict, status: int, code: str
) -> None:
    resp = requests.post(lab_stack.cfg.chat_url + "/chat", timeout=30, **kwargs)
    assert resp.status_code == status
    assert resp.headers["Content-Type"] == "application/json"
    body = resp.json()
    assert body["error"] == code and body["message"]
    assert "Traceback" not in resp.text


def test_unknown_defect_lists_the_valid_ones(lab_stack: NativeStack) -> None:
    resp = requests.post(
        lab_stack.cfg.chat_url + "/chat", json={"message": "hi"}, headers={"X-Lab-Defects": "nope"}, timeout=30
    )
    assert resp.json()["valid"] == [
        "fire_and_forget",
        "blind_retry",
        "ttl_set_once",
        "shared_loop_client",
        "swallowed_errors",
        "save_at_stream_end",
        "session_cookie",
        "read_modify_write",
    ]


@pytest.mark.parametrize("method, path, status", [("GET", "/nope", 404), ("DELETE", "/chat", 405)])
def test_unknown_routes_answer_json(lab_stack: NativeStack, method: str, path: str, status: int) -> None:
    resp = requests.request(method, lab_stack.cfg.chat_url + path, timeout=30)
    assert resp.status_code == status and resp.headers["Content-Type"] == "application/json"


def test_redis_unreachable_is_503_json_for_chat_and_history(lab_stack: NativeStack, toxi: Toxiproxy) -> None:
    toxi.set_enabled("redis", False)
    for resp in (
        requests.post(lab_stack.cfg.chat_url + "/chat", json={"message": "hi"}, timeout=30),
        requests.get(lab_stack.cfg.chat_url + "/history", timeout=30),
    ):
        assert resp.status_code == 503
        assert resp.headers["Content-Type"] == "application/json"
        assert resp.json()["error"] == "store_unavailable"
