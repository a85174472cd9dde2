"""Anthropic Messages: POST /v1/messages, streamed as named SSE events (message_start,
content_block_start, content_block_delta with text_delta, content_block_stop, message_delta,
message_stop), or one message object; the system prompt in ``system``."""

from __future__ import annotations

from typing import Any

from lab.standin.protocols import Answer, Protocol, register, sse, text_of
from lab.standin.reply import Message

ERRORS = {
    "rate_limit": (429, "rate_limit_error"),
    "server_error": (500, "api_error"),
    "overloaded": (529, "overloaded_error"),
}


def _messages(body: dict[str, Any]) -> list[Message]:
    system = text_of(body.get("system"))
    out = [Message("system", system)] if system else []
    return out + [
        Message(m["role"], text_of(m.get("content")))
        for m in body.get("messages", [])
        if isinstance(m, dict) and m.get("role") in ("user", "assistant")
    ]


def _message(a: Answer, content: list[dict[str, Any]], stop: str | None, output_tokens: int) -> dict[str, Any]:
    return {
        "id": f"msg_{a.id}",
        "type": "message",
        "role": "assistant",
        "model": a.model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": a.prompt_tokens, "output_tokens": output_tokens},
    }


def _head(a: Answer) -> list[bytes]:
    return [
        sse({"type": "message_start", "message": _message(a, [], None, 1)}, "message_start"),
        sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}, "content_block_start"),
    ]  # fmt: skip


def _token(a: Answer, tok: str, i: int) -> bytes:
    return sse({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": tok}}, "content_block_delta")  # fmt: skip


def _tail(a: Answer) -> list[bytes]:
    return [
        sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
        sse({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
             "usage": {"output_tokens": a.completion_tokens}}, "message_delta"),
        sse({"type": "message_stop"}, "message_stop"),
    ]  # fmt: skip


def _error(fault: str, message: str) -> tuple[int, dict[str, Any]]:
    status, kind = ERRORS[fault]
    return status, {"type": "error", "error": {"type": kind, "message": message}}


register(
    Protocol(
        name="anthropic_messages",
        path="/v1/messages",
        stream_type="text/event-stream",
        messages=_messages,
        wants_stream=lambda body: body.get("stream") is True,
        whole=lambda a: _message(a, [{"type": "text", "text": a.text}], "end_turn", a.completion_tokens),
        head=_head,
        token=_token,
        tail=_tail,
        error=_error,
    )
)
