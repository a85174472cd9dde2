"""model_error: the stand-in model answers the calls of one send with a provider's error -- a 429
with Retry-After, a 500, an overload (529 Anthropic, 503 elsewhere) -- as a provider under load
does. Set on the stand-in itself (a plan for every probe's call), not on the link: Toxiproxy can
delay or cut bytes, never answer in a provider's shape."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, ClassVar

from lab.common.errors import UsageError
from lab.faults.base import Fault, FaultNotConfirmed, Targets, register

KINDS = {"rate_limit": 429, "server_error": 500, "overloaded": 503}
PROBES = "chaoslab probe"  # every message the lab sends carries it: each of the trial group's calls


@register("model_error")
@dataclass
class ModelError(Fault):
    summary = "the stand-in model answers one send's calls with an error (kind: rate_limit, server_error, overloaded)"
    window: ClassVar[str] = "send"  # one send: the turns before and after it must get their answers
    modes: ClassVar[tuple[str, ...]] = ("native",)
    instead: ClassVar[str] = "a target spec with [model] (lab investigate starts the stand-in natively)"
    kind: str = "rate_limit"
    retry_after_s: int = 1

    def check(self) -> None:
        if self.kind not in KINDS:
            raise UsageError(
                f"model_error kind {self.kind!r} is not one the stand-in sends", f"valid: {', '.join(KINDS)}"
            )

    def apply(self, t: Targets) -> None:
        try:
            _post(_url(t) + "/_lab/plans", {"match": PROBES, "fault": self.kind, "retry_after_s": self.retry_after_s})
        except OSError:  # nothing listens: no stand-in in this run
            raise UsageError(
                f"model_error: no stand-in model answers at {_url(t)}",
                "it acts on the stand-in lab investigate starts for a target spec with [model] (docs/model.md)",
            ) from None

    def remove(self, t: Targets) -> None:
        req = urllib.request.Request(_url(t) + "/_lab/plans", method="DELETE")
        with urllib.request.urlopen(req, timeout=5):
            pass

    def confirm(self, t: Targets) -> str:
        # One call through the app's own way in (the model proxy), as the SDK would make it.
        body = {"model": "confirm", "messages": [{"role": "user", "content": f"{PROBES} fault-confirm"}]}
        status = _post(t.stack.cfg.model_url + "/v1/chat/completions", body)
        if status != KINDS[self.kind]:
            raise FaultNotConfirmed(f"{self.describe()}: a call through the model proxy got HTTP {status}")
        return f"a call through the model proxy was answered HTTP {status} ({self.kind})"


def _url(t: Targets) -> str:
    return str(t.stack.cfg.model_direct_url)


def _post(url: str, body: dict[str, Any]) -> int:
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return int(r.status)
    except urllib.error.HTTPError as exc:
        exc.close()
        return int(exc.code)
