"""The OpenAI Responses API: POST /v1/responses, the input a string or a list of messages (the
system prompt in ``instructions``), streamed as typed SSE events from response.created to
response.completed (each with its sequence_number), or one response object."""

from __future__ import annotations

from typing import Any

from lab.standin.protocols import Answer, Protocol, register, sse, text_of
from lab.standin.protocols.openai_chat import ROLES, _error
from lab.standin.reply import Message


def _messages(body: dict[str, Any]) -> list[Message]:
    out = [Message("system", body["instructions"])] if isinstance(body.get("instructions"), str) else []
    given = body.get("input")
    if isinstance(given, str):
        return [*out, Message("user", given)]
    for item in given if isinstance(given, list) else []:
        if isinstance(item, dict) and item.get("role") in ROLES and item.get("type", "message") == "message":
            out.append(Message(ROLES[item["role"]], text_of(item.get("content"))))
    return out


def _item(a: Answer, text: str, status: str) -> dict[str, Any]:
    part = {"type": "output_text", "text": text, "annotations": []}
    return {"type": "message", "id": f"msg_{a.id}", "status": status, "role": "assistant", "content": [part]}


def _response(a: Answer, status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    done = status == "completed"
    return {
        "id": f"resp_{a.id}",
        "object": "response",
        "created_at": a.created,
        "status": status,
        "model": a.model,
        "output": output,
        "error": None,
        "incomplete_details": None,
        "instructions": a.body.get("instructions") if isinstance(a.body.get("instructions"), str) else None,
        "metadata": {},
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": a.prompt_tokens,
            "output_tokens": a.completion_tokens,
            "total_tokens": a.prompt_tokens + a.completion_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        }
        if done
        else None,
    }


def _event(a: Answer, kind: str, **data: Any) -> bytes:
    return sse({"type": kind, "sequence_number": a.next_event(), **data}, kind)


def _head(a: Answer) -> list[bytes]:
    where = {"item_id": f"msg_{a.id}", "output_index": 0, "content_index": 0}
    return [
        _event(a, "response.created", response=_response(a, "in_progress", [])),
        _event(a, "response.in_progress", response=_response(a, "in_progress", [])),
        _event(a, "response.output_item.added", output_index=0, item={**_item(a, "", "in_progress"), "content": []}),
        _event(a, "response.content_part.added", **where, part={"type": "output_text", "text": "", "annotations": []}),
    ]


def _token(a: Answer, tok: str, i: int) -> bytes:
    return _event(a, "response.output_text.delta", item_id=f"msg_{a.id}", output_index=0, content_index=0, delta=tok)


def _tail(a: Answer) -> list[bytes]:
    text = "".join(a.tokens)
    where = {"item_id": f"msg_{a.id}", "output_index": 0, "content_index": 0}
    out = [
        _event(a, "response.output_text.done", **where, text=text),
        _event(a, "response.content_part.done", **where, part={"type": "output_text", "text": text, "annotations": []}),
        _event(a, "response.output_item.done", output_index=0, item=_item(a, text, "completed")),
        _event(a, "response.completed", response=_response(a, "completed", [_item(a, text, "completed")])),
    ]
    return out


register(
    Protocol(
        name="openai_responses",
        path="/v1/responses",
        stream_type="text/event-stream",
        messages=_messages,
        wants_stream=lambda body: body.get("stream") is True,
        whole=lambda a: _response(a, "completed", [_item(a, "".join(a.tokens), "completed")]),
        head=_head,
        token=_token,
        tail=_tail,
        error=_error,
    )
)
