"""model_stall: the stand-in model accepts one send's calls and sends nothing -- no headers, no
first token -- for ``hold_ms``, then closes the connection (lab.faults.standin_plan): a provider
that hangs, as an overloaded one does behind its load balancer. An app gives up at its own
timeout (the call is recorded "client_gone") or meets the closed connection ("held"); either way
the model failed that send, and a message stored only once the model has answered is lost
(lost_after_model_error). Longer than most trials: opt-in (`--only model_stall`)."""

from __future__ import annotations

import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from lab.common.errors import UsageError
from lab.faults.base import FaultNotConfirmed, Targets, register
from lab.faults.standin_plan import PROBES, StandInFault

CONFIRM_WAIT_S = 0.5  # a call through the model proxy must get nothing at all for this long
# Past the timeouts apps set on a model call (the built-in service's is 10 s), short of an SDK's
# default (the openai SDK's 10 minutes): the stall then ends with the connection closed.
HOLD_MS = 12_000


@register("model_stall")
@dataclass
class ModelStall(StandInFault):
    summary = "the stand-in model answers nothing to one send's calls for hold_ms (no first token), then hangs up"
    hold_ms: int = HOLD_MS

    def check(self) -> None:
        if not 1_000 <= self.hold_ms <= 60_000:
            raise UsageError(
                f"model_stall hold_ms={self.hold_ms!r}", "give how long the calls get nothing: 1000 to 60000 ms"
            )

    def plan(self) -> dict[str, Any]:
        return {"fault": "no_first_token", "hold_ms": self.hold_ms}

    def confirm(self, t: Targets) -> str:
        # One call through the app's own way in (the model proxy): no byte of an answer may come.
        body = b'{"model": "confirm", "messages": [{"role": "user", "content": "%s fault-confirm"}]}' % PROBES.encode()
        req = urllib.request.Request(
            t.stack.cfg.model_url + "/v1/chat/completions", body, {"Content-Type": "application/json"}
        )
        quiet = f"a call through the model proxy got no answer in {CONFIRM_WAIT_S:g} s (held {self.hold_ms} ms)"
        try:
            with urllib.request.urlopen(req, timeout=CONFIRM_WAIT_S) as r:
                status = r.status
        except urllib.error.HTTPError as exc:
            exc.close()
            status = exc.code
        except (TimeoutError, urllib.error.URLError) as exc:  # socket.timeout is TimeoutError
            if isinstance(exc, TimeoutError) or isinstance(exc.reason, TimeoutError):
                return quiet
            raise FaultNotConfirmed(f"{self.describe()}: a call through the model proxy failed: {exc.reason}") from None
        raise FaultNotConfirmed(f"{self.describe()}: a call through the model proxy was answered HTTP {status}")
