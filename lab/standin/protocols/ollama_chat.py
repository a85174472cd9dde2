"""Ollama's chat: POST /api/chat, streamed by default as JSON lines (each a message fragment,
``done: false``; the last ``done: true`` with the counts), or one object with ``stream: false``."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from lab.standin.protocols import Answer, Protocol, register, text_of
from lab.standin.reply import Message

STATUS = {"rate_limit": 429, "server_error": 500, "overloaded": 503}


def _messages(body: dict[str, Any]) -> list[Message]:
    return [
        Message(m["role"], text_of(m.get("content")))
        for m in body.get("messages", [])
        if isinstance(m, dict) and m.get("role") in ("system", "user", "assistant")
    ]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


def _line(a: Answer, content: str, done: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "model": a.model,
        "created_at": _now(),
        "message": {"role": "assistant", "content": content},
        "done": done,
    }
    if done:
        out.update(
            done_reason="stop",
            total_duration=0,
            load_duration=0,
            prompt_eval_count=a.prompt_tokens,
            prompt_eval_duration=0,
            eval_count=a.completion_tokens,
            eval_duration=0,
        )
    return out


def _ndjson(data: dict[str, Any]) -> bytes:
    return (json.dumps(data) + "\n").encode()


register(
    Protocol(
        name="ollama_chat",
        path="/api/chat",
        stream_type="application/x-ndjson",
        messages=_messages,
        wants_stream=lambda body: body.get("stream", True) is not False,
        whole=lambda a: _line(a, a.text, True),
        head=lambda a: [],
        token=lambda a, tok, i: _ndjson(_line(a, tok, False)),
        tail=lambda a: [_ndjson(_line(a, "", True))],
        error=lambda fault, message: (STATUS[fault], {"error": message}),
    )
)
