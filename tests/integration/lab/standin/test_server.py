"""The stand-in model as a real process on a free port, spoken to over HTTP as an SDK does: each
protocol whole and streamed (its own event shapes, the reply the tokens make), the faults a plan
sets (429 with Retry-After, Anthropic's 529, a stream cut mid-body, no first token), the calls
recorded, bad control input refused with the valid values, and SIGTERM ending it."""

from __future__ import annotations

import contextlib
import http.client
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from lab.common.wait import wait_until

ADA = "Hi, I am Ada and I like chess"
HISTORY = [
    {"role": "user", "content": ADA},
    {"role": "assistant", "content": "noted"},
    {"role": "user", "content": "probe trial-9 turn 2: what is my name?"},
]
REPLY = 'Turn 2 as I see it. You first said "Hi, I am Ada and I like..."; just now you said "probe trial-9 turn 2: what is my...".'


@contextlib.contextmanager
def _open(
    port: int, method: str, path: str, body: Any = None, timeout: float = 10
) -> Iterator[http.client.HTTPResponse]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        data = json.dumps(body).encode() if body is not None else None
        conn.request(method, path, body=data, headers={"Content-Type": "application/json"} if data else {})
        yield conn.getresponse()
    finally:
        conn.close()


def _call(port: int, method: str, path: str, body: Any = None) -> tuple[int, dict[str, str], bytes]:
    with _open(port, method, path, body) as r:
        return r.status, dict(r.getheaders()), r.read()


def _get(port: int, path: str) -> Any:
    return json.loads(_call(port, "GET", path)[2])


def _post(port: int, path: str, body: Any) -> tuple[int, Any, dict[str, str]]:
    status, headers, raw = _call(port, "POST", path, body)
    return status, json.loads(raw), headers


def _sse(raw: bytes) -> list[dict[str, Any]]:
    out = []
    for block in raw.decode().split("\n\n"):
        data = [ln[6:] for ln in block.splitlines() if ln.startswith("data: ")]
        if data:
            out.append({"done": True} if data[0] == "[DONE]" else json.loads(data[0]))
    return out


BODIES = {
    "/v1/chat/completions": {"model": "gpt-x", "messages": [{"role": "system", "content": "Be brief."}, *HISTORY]},
    "/v1/responses": {"model": "gpt-x", "instructions": "Be brief.", "input": HISTORY},
    "/v1/messages": {"model": "claude-x", "max_tokens": 100, "system": "Be brief.", "messages": HISTORY},
    "/api/chat": {
        "model": "llama-x",
        "messages": [{"role": "system", "content": "Be brief."}, *HISTORY],
        "stream": False,
    },
}


def _text(path: str, body: dict[str, Any]) -> str:
    if path == "/v1/chat/completions":
        return str(body["choices"][0]["message"]["content"])
    if path == "/v1/responses":
        return str(body["output"][0]["content"][0]["text"])
    if path == "/v1/messages":
        return str(body["content"][0]["text"])
    return str(body["message"]["content"])


@pytest.mark.parametrize("path", list(BODIES))
def test_a_whole_answer_in_each_providers_shape_shows_the_memory_given(port: int, path: str) -> None:
    status, body, _ = _post(port, path, BODIES[path])
    assert status == 200 and _text(path, body) == REPLY, body
    # Recorded before the answer's last byte, so read at once after the answer (when it was
    # recorded as its handler returned, a loaded fresh-clone CI run read an empty record).
    call = _get(port, "/_lab/calls")["calls"][-1]
    assert call["outcome"] == "whole" and call["stream"] is False and call["reply"] == REPLY
    assert [m["role"] for m in call["messages"]] == ["system", "user", "assistant", "user"], call["messages"]
    assert call["t_start"] <= call["t_end"]


def test_an_openai_stream_ends_with_the_usage_chunk_and_done(port: int) -> None:
    body = {**BODIES["/v1/chat/completions"], "stream": True, "stream_options": {"include_usage": True}}
    status, headers, raw = _call(port, "POST", "/v1/chat/completions", body)
    assert status == 200 and headers["Content-Type"] == "text/event-stream"
    events = _sse(raw)
    assert events[-1] == {"done": True} and events[-2]["choices"] == [] and events[-2]["usage"]["completion_tokens"] > 0
    assert events[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join(e["choices"][0]["delta"].get("content", "") for e in events[:-2])
    assert text == REPLY and events[-3]["choices"][0]["finish_reason"] == "stop"


def test_anthropic_and_responses_streams_keep_their_event_order(port: int) -> None:
    kinds = [
        e["type"] for e in _sse(_call(port, "POST", "/v1/messages", {**BODIES["/v1/messages"], "stream": True})[2])
    ]
    assert kinds[:2] == ["message_start", "content_block_start"] and set(kinds[2:-3]) == {"content_block_delta"}
    assert kinds[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    events = _sse(_call(port, "POST", "/v1/responses", {**BODIES["/v1/responses"], "stream": True})[2])
    assert events[0]["type"] == "response.created" and events[-1]["type"] == "response.completed"
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    assert text == REPLY == events[-1]["response"]["output"][0]["content"][0]["text"]


def test_ollama_streams_json_lines_by_default(port: int) -> None:
    raw = _call(port, "POST", "/api/chat", {"model": "llama-x", "messages": HISTORY})[2]
    lines = [json.loads(x) for x in raw.decode().splitlines()]
    assert [x["done"] for x in lines] == [False] * (len(lines) - 1) + [True]
    assert "".join(x["message"]["content"] for x in lines) == REPLY and lines[-1]["eval_count"] == len(lines) - 1


def test_a_plan_sets_the_length_and_a_cut_stream_breaks_off_mid_body(port: int) -> None:
    assert _post(port, "/_lab/plans", {"match": "trial-9", "tokens": 5})[0] == 200
    status, body, _ = _post(port, "/v1/chat/completions", BODIES["/v1/chat/completions"])
    assert _text("/v1/chat/completions", body) == "Turn 2 as I see "
    assert _post(port, "/_lab/plans", {"match": "trial-9", "fault": "cut", "cut_after": 3})[0] == 200
    with _open(port, "POST", "/v1/messages", {**BODIES["/v1/messages"], "stream": True}) as r:
        with pytest.raises(http.client.IncompleteRead):  # no last chunk: the body is broken, not ended
            r.read()
    call = next(c for c in _get(port, "/_lab/calls")["calls"] if c["outcome"] == "cut")  # before the close
    assert call["tokens_sent"] == 3 and call["reply"] == "Turn 2 as " and call["match"] == "trial-9"


def test_a_call_being_streamed_is_open_until_its_last_event(port: int) -> None:
    """A page gone mid-answer does not end the app's call: the lab waits on the open ones."""
    _post(port, "/_lab/plans", {"match": "trial-9", "token_ms": 40})
    body = {**BODIES["/v1/chat/completions"], "stream": True}
    since = time.time()
    with _open(port, "POST", "/v1/chat/completions", body) as r:
        assert r.read(1)  # the first event is out; about 20 more tokens, 40 ms apart, to come
        record = _get(port, f"/_lab/calls?since={since}")
        assert [c["messages"][-1]["text"] for c in record["open"]] == [HISTORY[-1]["content"]], record
        assert record["calls"] == [], record
        r.read()
    record = _get(port, f"/_lab/calls?since={since}")  # ended before its last event went out
    assert record["open"] == [] and [c["outcome"] for c in record["calls"]] == ["whole"], record


@pytest.mark.parametrize(
    ("path", "fault", "status", "kind"),
    [
        ("/v1/chat/completions", "rate_limit", 429, "requests"),
        ("/v1/messages", "overloaded", 529, "overloaded_error"),
        ("/api/chat", "server_error", 500, None),
    ],
)
def test_an_error_fault_in_the_providers_shape(port: int, path: str, fault: str, status: int, kind: str | None) -> None:
    _post(port, "/_lab/plans", {"match": "trial-9", "fault": fault, "retry_after_s": 2})
    got, body, headers = _post(port, path, BODIES[path])
    assert got == status, body
    if fault == "rate_limit":
        assert headers["Retry-After"] == "2" and body["error"]["type"] == kind
    elif kind:
        assert body["error"]["type"] == kind
    else:
        assert "injected" in body["error"]


def test_no_first_token_holds_the_call_past_the_clients_timeout(port: int) -> None:
    _post(port, "/_lab/plans", {"match": "trial-9", "fault": "no_first_token", "hold_ms": 400})
    body = {**BODIES["/v1/chat/completions"], "stream": True}
    with _open(port, "POST", "/v1/chat/completions", body, timeout=0.2) as r, pytest.raises(TimeoutError):
        r.read(1)
    call = wait_until(
        lambda: next((c for c in _get(port, "/_lab/calls")["calls"] if c["outcome"] in ("held", "client_gone")), None),
        what="the held call recorded",
    )
    assert call["tokens_sent"] == 0 and call["t_end"] - call["t_start"] >= 0.4


@pytest.mark.parametrize(
    ("method", "path", "body", "says"),
    [
        ("POST", "/_lab/plans", {"match": "x", "fault": "boom"}, "valid faults are rate_limit"),
        ("POST", "/_lab/plans", {"fault": "cut"}, "match: give a non-empty text"),
        ("POST", "/v1/completions", {"prompt": "x"}, "the stand-in serves /api/chat, /v1/chat/completions"),
    ],
)
def test_bad_input_is_a_4xx_that_names_the_valid_values(
    port: int, method: str, path: str, body: Any, says: str
) -> None:
    status, _, raw = _call(port, method, path, body)
    assert 400 <= status < 500 and says in json.loads(raw)["error"]["message"]


def test_the_record_read_for_one_trial_holds_only_its_calls(port: int) -> None:
    """match: trials run side by side, and each reads only the calls its messages made."""
    since = time.time()
    for trial in ("c001-000", "c001-001"):
        msgs = [{"role": "user", "content": f"What is my name? (chaoslab probe {trial})"}]
        assert _post(port, "/v1/chat/completions", {"model": "m", "messages": msgs})[0] == 200
    # The stand-in records a call once its handler returns, a moment after the client has read
    # the answer: on a loaded CI run the read came first (2026-12-06). Both calls, then the match.
    wait_until(
        lambda: len(_get(port, f"/_lab/calls?since={since}")["calls"]) == 2 or None,
        what="the stand-in's record of both calls",
        timeout_s=5,
    )
    mine = _get(port, f"/_lab/calls?since={since}&match=chaoslab+probe+c001-001%29")
    assert [c["messages"][-1]["text"] for c in mine["calls"]] == ["What is my name? (chaoslab probe c001-001)"]
    assert len(_get(port, f"/_lab/calls?since={since}")["calls"]) == 2  # no match: every call
