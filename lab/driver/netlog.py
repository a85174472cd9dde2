"""A trial's sends as the browser's own network events record them: invoke, then ok (2xx; a
stream: its first token) / fail (4xx) / info (5xx, timeout, aborted). Events that arrive
before the driver has learnt a message's id are kept and replayed when the send is registered."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from playwright.async_api import Request, Response

from lab.model.history import Outcome, Send


class NetworkLog:
    """Mixed into ChatDriver: the handlers its pages' request / response / requestfailed call."""

    stream: bool

    def __init__(self) -> None:
        self.sends: list[Send] = []
        self.log: list[dict[str, Any]] = []  # browser-side timeline (network + actions)
        self._done: dict[int, asyncio.Event] = {}  # id(send) -> completion
        self._status: dict[int, int] = {}
        # Network events that arrived before the driver learnt the message id (a fast reply can
        # beat the read of the new bubble's data-id): replayed when the send is registered.
        self._early: dict[str, list[tuple[str, Any]]] = {}
        self.other_failures: list[str] = []  # the network's reasons for the page's other requests

    def _note(self, kind: str, **fields: Any) -> None:
        self.log.append({"t": time.time(), "kind": kind, **fields})

    def _open_send(self, mid: str | None) -> Send | None:
        return next((s for s in self.sends if s.id == mid and s.outcome is None), None)

    @staticmethod
    def _chat_id(req: Request) -> str | None:
        if req.method != "POST" or not req.url.endswith("/chat"):
            return None
        try:
            return str(json.loads(req.post_data or "{}").get("id"))
        except ValueError:
            return None

    def _unsent(self, mid: str | None) -> Send | None:
        """The first send of this id whose request has not been seen (a double submit sends
        one id twice: each request belongs to the next of its sends)."""
        return next((s for s in self.sends if s.id == mid and s.outcome is None and not s.t_invoke), None)

    def _on_request(self, req: Request) -> None:
        mid = self._chat_id(req)
        if mid is not None:
            self._note("request", id=mid)
            s = self._unsent(mid)
            if s is None:
                self._early.setdefault(mid, []).append(("request", time.time()))
            else:
                s.t_invoke = time.time()

    def _on_response(self, resp: Response) -> None:
        mid = self._chat_id(resp.request)
        if mid is None:
            return
        self._note("response", id=mid, status=resp.status)
        s = self._open_send(mid)
        if s is None:
            self._early.setdefault(mid, []).append(("response", resp.status))
            return
        self._got_status(s, resp.status)

    def _got_status(self, s: Send, status: int) -> None:
        self._status[id(s)] = status
        if self.stream and 200 <= status < 300:
            return  # a stream is acknowledged by its first token, seen on the page
        self._complete(s, status, f"HTTP {status}")

    def _on_failed(self, req: Request) -> None:
        mid = self._chat_id(req)
        if mid is None:
            # Another request the page made (its history read): the network's reason is kept, for
            # a read that failed only as the machine's network changed (lab.model.checker).
            self.other_failures.append(req.failure or "failed")
            return
        self._note("requestfailed", id=mid, failure=req.failure)
        s = self._open_send(mid)
        if s is None:
            self._early.setdefault(mid, []).append(("failed", req.failure))
        else:
            self._failed(s, req.failure)

    def _failed(self, s: Send, failure: str | None) -> None:
        s.complete("info", self._status.get(id(s)), failure or "failed", time.time())
        self._done[id(s)].set()

    def _register(self, *sends: Send) -> Send:
        """Record sends the page has just made (all of one submit: a double submit is two), then
        give them the network events that came first, in order, as if they came now."""
        for s in sends:
            self.sends.append(s)
            self._done[id(s)] = asyncio.Event()
        for mid in dict.fromkeys(s.id for s in sends):
            for kind, value in self._early.pop(mid, []):
                if kind == "request" and (u := self._unsent(mid)) is not None:
                    u.t_invoke = value
                elif kind == "response" and (o := self._open_send(mid)) is not None:
                    self._got_status(o, value)
                elif kind == "failed" and (o := self._open_send(mid)) is not None:
                    self._failed(o, value)
        return sends[0]

    def _complete(self, s: Send, status: int, reason: str) -> None:
        outcome: Outcome = "ok" if status < 400 else "fail" if status < 500 else "info"
        s.complete(outcome, status, reason, time.time())
        self._done[id(s)].set()
