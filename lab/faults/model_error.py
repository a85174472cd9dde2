"""model_error: the stand-in model answers the calls of one send with a provider's error -- a 429
with Retry-After, a 500, an overload (529 Anthropic, 503 elsewhere) -- as a provider under load
does (lab.faults.standin_plan). ``times``: only each message's first N calls fail -- a provider
that recovers, which an app that retries gets past."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lab.common.errors import UsageError
from lab.faults.base import FaultNotConfirmed, Targets, register
from lab.faults.standin_plan import PROBES, StandInFault, post

KINDS = {"rate_limit": 429, "server_error": 500, "overloaded": 503}


@register("model_error")
@dataclass
class ModelError(StandInFault):
    summary = "the stand-in model answers one send's calls with an error (kind: rate_limit, server_error, overloaded)"
    kind: str = "rate_limit"
    retry_after_s: int = 1
    times: int = 0  # each message's first N calls only, then the provider recovers (0: every call)

    def check(self) -> None:
        if self.kind not in KINDS:
            raise UsageError(
                f"model_error kind {self.kind!r} is not one the stand-in sends", f"valid: {', '.join(KINDS)}"
            )
        if not 0 <= self.times <= 100:
            raise UsageError(f"model_error times={self.times!r}", "give 0 (every call) or the first N calls: 1 to 100")

    def plan(self) -> dict[str, Any]:
        once = {"times": self.times} if self.times else {}
        return {"fault": self.kind, "retry_after_s": self.retry_after_s, **once}

    def confirm(self, t: Targets) -> str:
        # One call through the app's own way in (the model proxy), as the SDK would make it.
        body = {"model": "confirm", "messages": [{"role": "user", "content": f"{PROBES} fault-confirm"}]}
        status = post(t.stack.cfg.model_url + "/v1/chat/completions", body)
        if status != KINDS[self.kind]:
            raise FaultNotConfirmed(f"{self.describe()}: a call through the model proxy got HTTP {status}")
        return f"a call through the model proxy was answered HTTP {status} ({self.kind})"
