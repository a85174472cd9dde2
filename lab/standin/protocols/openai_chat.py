"""OpenAI Chat Completions: POST /v1/chat/completions, streamed as SSE chunks ending in
``data: [DONE]`` (with ``stream_options.include_usage``: a last chunk with no choices and the
usage), or one chat.completion object."""

from __future__ import annotations

from typing import Any

from lab.standin.protocols import Answer, Protocol, register, sse, text_of
from lab.standin.reply import Message

ROLES = {"developer": "system", "system": "system", "user": "user", "assistant": "assistant"}
ERRORS = {
    "rate_limit": (429, "rate_limit_exceeded", "requests"),
    "server_error": (500, "server_error", "server_error"),
    "overloaded": (503, "overloaded", "server_error"),
}


def _messages(body: dict[str, Any]) -> list[Message]:
    return [
        Message(ROLES[m["role"]], text_of(m.get("content")))
        for m in body.get("messages", [])
        if isinstance(m, dict) and m.get("role") in ROLES
    ]


def _usage(a: Answer) -> dict[str, int]:
    return {
        "prompt_tokens": a.prompt_tokens,
        "completion_tokens": a.completion_tokens,
        "total_tokens": a.prompt_tokens + a.completion_tokens,
    }


def _chunk(a: Answer, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": f"chatcmpl-{a.id}",
        "object": "chat.completion.chunk",
        "created": a.created,
        "model": a.model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
    }
    if _include_usage(a):
        out["usage"] = None
    return out


def _include_usage(a: Answer) -> bool:
    opts = a.body.get("stream_options")
    return isinstance(opts, dict) and bool(opts.get("include_usage"))


def _whole(a: Answer) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{a.id}",
        "object": "chat.completion",
        "created": a.created,
        "model": a.model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": a.text, "refusal": None},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": _usage(a),
    }


def _tail(a: Answer) -> list[bytes]:
    out = [sse(_chunk(a, {}, "stop"))]
    if _include_usage(a):
        out.append(
            sse({"id": f"chatcmpl-{a.id}", "object": "chat.completion.chunk", "created": a.created,
                 "model": a.model, "choices": [], "usage": _usage(a)})
        )  # fmt: skip
    return [*out, b"data: [DONE]\n\n"]


def _error(fault: str, message: str) -> tuple[int, dict[str, Any]]:
    status, code, kind = ERRORS[fault]
    return status, {"error": {"message": message, "type": kind, "param": None, "code": code}}


register(
    Protocol(
        name="openai_chat",
        path="/v1/chat/completions",
        stream_type="text/event-stream",
        messages=_messages,
        wants_stream=lambda body: body.get("stream") is True,
        whole=_whole,
        head=lambda a: [sse(_chunk(a, {"role": "assistant", "content": ""}))],
        token=lambda a, tok, i: sse(_chunk(a, {"content": tok})),
        tail=_tail,
        error=_error,
    )
)
