from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis
import requests

from lab.stack.native import NativeStack


@dataclass
class Chat:
    """One user's conversation over HTTP, with a lab profile in the X-Lab-* headers."""

    base: str
    truth: "redis.Redis[bytes]"
    headers: dict[str, str] = field(default_factory=dict)
    s: requests.Session = field(default_factory=requests.Session)
    sent: list[tuple[str, int]] = field(default_factory=list)  # (message id, HTTP status)

    def send(self, message: str, mid: str | None = None, **body: Any) -> requests.Response:
        mid = mid or uuid.uuid4().hex
        resp = self.s.post(
            self.base + "/chat",
            json={"message": message, "id": mid, **body},
            headers=self.headers,
            timeout=60,
            stream=bool(body.get("stream")),
        )
        self.sent.append((mid, resp.status_code))
        return resp

    @property
    def sid(self) -> str:
        return self.s.cookies["session_id"]

    def stored(self) -> list[dict[str, str]]:
        """The conversation as Redis holds it, read directly (not through Toxiproxy)."""
        return [json.loads(x) for x in self.truth.lrange(f"chat:{self.sid}", 0, -1)]

    def stored_ids(self, role: str) -> list[str]:
        return [r["id"] for r in self.stored() if r["role"] == role]


@pytest.fixture
def chat(lab_stack: NativeStack, redis_direct: "redis.Redis[bytes]") -> Callable[..., Chat]:
    def make(*defects: str, **headers: int | str) -> Chat:
        h = {"X-Lab-Defects": ",".join(defects)}
        h.update({"X-Lab-" + k.replace("_", "-").title(): str(v) for k, v in headers.items()})
        return Chat(lab_stack.cfg.chat_url, redis_direct, h)

    return make
