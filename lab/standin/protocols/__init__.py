"""The providers' APIs the stand-in speaks, one module each, registered by name: where a call
comes in, what messages it carried, and the bytes of a whole answer, a stream's events and an
error in that provider's own shapes."""

from __future__ import annotations

import importlib
import pkgutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lab.standin.reply import Message


@dataclass
class Answer:
    """One call's answer as the protocol modules shape it."""

    model: str
    text: str
    tokens: list[str]
    prompt_tokens: int
    body: dict[str, Any]  # the request's, for options such as include_usage
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:24])
    created: int = field(default_factory=lambda: int(time.time()))
    events: int = 0  # a stream's events so far (the Responses API numbers them)

    def next_event(self) -> int:
        self.events += 1
        return self.events - 1

    @property
    def completion_tokens(self) -> int:
        return len(self.tokens)


@dataclass(frozen=True)
class Protocol:
    name: str
    path: str  # POST
    stream_type: str  # the streamed body's content type
    messages: Callable[[dict[str, Any]], list[Message]]
    wants_stream: Callable[[dict[str, Any]], bool]
    whole: Callable[[Answer], dict[str, Any]]
    head: Callable[[Answer], list[bytes]]  # a stream's events before its first token
    token: Callable[[Answer, str, int], bytes]
    tail: Callable[[Answer], list[bytes]]  # its events after the last token (the final ones)
    error: Callable[[str, str], tuple[int, dict[str, Any]]]  # fault, message -> status, body


REGISTRY: dict[str, Protocol] = {}


def register(p: Protocol) -> Protocol:
    REGISTRY[p.name] = p
    return p


def by_path(path: str) -> Protocol | None:
    return next((p for p in REGISTRY.values() if p.path == path), None)


def load() -> dict[str, Protocol]:
    """Every protocol module, imported once: the registry filled."""
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")
    return REGISTRY


def sse(data: dict[str, Any], event: str | None = None) -> bytes:
    import json

    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


def text_of(content: Any) -> str:
    """A message's text: a string, or the text parts of a list of content parts (any provider's)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""
