"""The target spec's model: what `lab investigate` knows of a foreign chat backend (frozen
dataclasses; parsed and validated by lab.investigate.spec)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Start:
    command: tuple[str, ...]
    cwd: Path
    env: dict[str, str]
    ready_timeout_s: float


@dataclass(frozen=True)
class Http:
    base_url: str
    port: int
    ready_path: str | None
    cookie: str


@dataclass(frozen=True)
class Chat:
    path: str
    message_field: str
    id_field: str | None
    reply_path: str | None
    timeout_s: float


@dataclass(frozen=True)
class History:
    path: str
    format: str
    items: str
    role_field: str
    content_field: str
    separator: str
    order: str
    user_role: str
    assistant_role: str
    id_field: str | None = None  # objects only: the message id the chat request took ([chat] id_field)


@dataclass(frozen=True)
class Stream:
    """The chat answer can stream (any chunked body: NDJSON, SSE, plain text). A streamed send
    counts as acknowledged at its first chunk, as the user sees the reply begin."""

    request: dict[str, Any]  # fields merged into the chat body to ask for a stream ({}: always streams)


@dataclass(frozen=True)
class PageSpec:
    """The app's own page, driven by selectors: the lab types and clicks as a user does, reads
    the statuses of the page's own requests from the network, and the history from the DOM."""

    path: str
    input: str  # the message box
    send: str | None  # the send button; None: Enter in the message box
    message: str  # one element per rendered message
    role_attribute: str  # the attribute on a message element that holds its role
    order: str  # oldest_first | newest_first, as rendered
    ready: str | None  # present once the page rendered its history (else: its GET + 2 frames)
    idle: str | None  # present once a send is finished (else: the answer's body read)


@dataclass(frozen=True)
class RedisKey:
    key: str | None  # e.g. "chat:{session}": the conversation's key, {session} = the cookie value


@dataclass(frozen=True)
class Spec:
    name: str
    file: Path
    start: Start
    http: Http
    chat: Chat
    history: History
    redis: RedisKey = field(default_factory=lambda: RedisKey(None))
    stream: Stream | None = None
    page: PageSpec | None = None
    # [source] paths: the app's code, relative to start.cwd, for `lab suspects` beside the
    # diagnoses (proven / not proven / not exercised lines).
    source: tuple[Path, ...] = ()

    def url(self, path: str) -> str:
        return self.http.base_url.rstrip("/") + path
