"""A fake LLM with memory you can see: deterministic replies that recall what the user said.

With an empty history it greets the user as a stranger and asks them to introduce
themselves: exactly what users saw when the conversation had vanished.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import re
import select
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import SplitResult, urlsplit

from services.chat.store import Row

GREETING = "Hello! I don't think we've met. Please introduce yourself: what's your name?"
_NAME = re.compile(r"\b(?:my name is|i am|i'm|call me)\s+([A-Za-z][A-Za-z'-]{0,40})", re.I)
_LIKE = re.compile(r"\bi (?:really )?(?:like|love|prefer|enjoy)\s+([^.!?]{1,60})", re.I)
_ASK_NAME = re.compile(r"\b(what'?s|what is|do you (?:know|remember)) my name\b|\bwho am i\b", re.I)
_ASK_LIKE = re.compile(r"\bwhat do i (?:like|love|prefer|enjoy)\b", re.I)
_NOT_NAMES = {"not", "so", "very", "fine", "here", "back", "a", "an", "the", "just", "also"}


def _facts(messages: Sequence[str]) -> tuple[str | None, str | None]:
    name = like = None
    for text in messages:
        m = _NAME.search(text)
        if m and m.group(1).lower() not in _NOT_NAMES:
            name = m.group(1)[0].upper() + m.group(1)[1:]
        m = _LIKE.search(text)
        if m:
            like = m.group(1).strip()
    return name, like


def reply(history: Sequence[Row], message: str) -> str:
    """The reply to ``message`` given the stored conversation before it."""
    earlier = [r.content for r in history if r.role == "user"]
    name, like = _facts([*earlier, message])
    new_name = _facts([message])[0]
    turn = len(earlier) + 1
    if _ASK_NAME.search(message):
        return f"Your name is {name}." if name else "I don't know your name yet: you haven't told me."
    if _ASK_LIKE.search(message):
        return f"You told me you like {like}." if like else "You haven't told me what you like yet."
    if new_name and not earlier:
        return f"Nice to meet you, {new_name}! What would you like to talk about?"
    if not earlier:
        return GREETING
    who = name or "friend"
    memory = f" You told me you like {like}." if like else ""
    return f"Noted, {who}. This is message {turn} of our conversation.{memory}"


async def think(latency_ms: int) -> None:
    """The model's time to first token (configurable; the lab's experiments depend on it)."""
    if latency_ms > 0:
        await asyncio.sleep(latency_ms / 1000)


def tokens(text: str) -> list[str]:
    """Split a reply into word tokens (keeping spaces) for streaming."""
    return re.findall(r"\S+\s*", text) or [text]


class ModelFailed(Exception):
    """The model provider did not answer (an error status, a timeout, a body without a reply)."""


async def ask(base_url: str, history: Sequence[Row], message: str, timeout_s: float) -> str:
    """The reply from an OpenAI-compatible provider (CHAT_MODEL_URL), given the stored
    conversation before ``message``, as an app on the openai SDK sends it: every row, oldest
    first, then the new message. In a thread of the worker's pool: the standard library's client
    is blocking."""
    messages = [{"role": r.role, "content": r.content} for r in history] + [{"role": "user", "content": message}]
    body = json.dumps({"model": "chat-service", "messages": messages}).encode()
    url = urlsplit(base_url.rstrip("/") + "/chat/completions")

    def call() -> str:
        try:
            status, data = _post(url, body, timeout_s)
        except (OSError, http.client.HTTPException) as exc:  # refused, reset, timed out, cut off
            raise ModelFailed(f"the model did not answer: {exc}") from None
        if not 200 <= status < 300:
            raise ModelFailed(f"the model answered HTTP {status}")
        try:
            return str(json.loads(data)["choices"][0]["message"]["content"])
        except (ValueError, KeyError, IndexError, TypeError):
            raise ModelFailed("the model's answer has no message") from None

    return await asyncio.get_running_loop().run_in_executor(_pool(), call)


# Each pool thread keeps its connection to the provider open between calls, as the openai SDK's
# client does: measured through Toxiproxy (300 calls, 2026-12-04), a median 0.90 ms a call on a new
# connection each time, 0.47 ms on a kept one.
_KEPT = threading.local()


def _post(url: SplitResult, body: bytes, timeout_s: float) -> tuple[int, bytes]:
    """POST ``body`` on this thread's kept connection (a new one where it has none, or where the
    provider has closed it since: never a request sent on a closed connection and retried --
    a call that fails mid-way is the call's failure). Any error closes the connection."""
    conn: http.client.HTTPConnection | None = getattr(_KEPT, "conn", None)
    if conn is not None and (getattr(_KEPT, "netloc", None) != url.netloc or _dropped(conn)):
        conn.close()
        conn = None
    if conn is None:
        kind = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
        conn = kind(url.hostname or "127.0.0.1", url.port, timeout=timeout_s)
        _KEPT.conn, _KEPT.netloc = conn, url.netloc
    try:
        conn.timeout = timeout_s
        if conn.sock is not None:
            conn.sock.settimeout(timeout_s)
        conn.request("POST", url.path, body, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        data = resp.read()
        if resp.will_close:
            conn.close()
        return resp.status, data
    except BaseException:
        conn.close()
        raise


def close_kept() -> None:
    """Close this thread's kept connection, if it has one."""
    conn = getattr(_KEPT, "conn", None)
    if conn is not None:
        conn.close()
        _KEPT.conn = None


def _dropped(conn: http.client.HTTPConnection) -> bool:
    """Whether the provider closed the kept connection (it reads as at its end already)."""
    if conn.sock is None:
        return True
    try:
        readable, _, _ = select.select([conn.sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)  # nothing is owed on an idle connection: readable means closed (or junk)


_POOL: list[ThreadPoolExecutor] = []


def _pool() -> ThreadPoolExecutor:
    """The worker process's threads for model calls. Each async view runs in a loop of its own
    (Flask's asyncio.run), whose default executor starts and joins a thread per request:
    measured (300 calls through Toxiproxy, 2026-12-04) a median 2.3 ms a call that way, 1.6 ms
    from threads kept across requests. Made on first use, in the worker (a pool made before
    gunicorn forks would have no threads in it)."""
    if not _POOL:
        _POOL.append(ThreadPoolExecutor(max_workers=8, thread_name_prefix="model-call"))
    return _POOL[0]
