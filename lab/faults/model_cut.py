"""model_cut: the stand-in model's stream for one send stops part-way -- after ``cut_after``
tokens the connection closes with no final event (no finish_reason, no [DONE], no
message_stop), as a provider's stream does when it breaks. An app that keeps what arrived as
the whole reply stores a cut answer that nothing marks (cut_reply_stored_whole); an app that
calls the model without streaming gets its answer whole, and the trial is unknown (nothing cut)."""

from __future__ import annotations

import http.client
import json
import urllib.request
from dataclasses import dataclass
from typing import Any

from lab.common.errors import UsageError
from lab.faults.base import FaultNotConfirmed, Targets, register
from lab.faults.standin_plan import PROBES, StandInFault

# Part-way into the stand-in's reply (about 20 tokens): past its first words, short of its end.
CUT_AFTER = 10


@register("model_cut")
@dataclass
class ModelCut(StandInFault):
    summary = "the stand-in model's stream for one send stops after cut_after tokens, without its final event"
    cut_after: int = CUT_AFTER

    def check(self) -> None:
        if not 1 <= self.cut_after <= 100:
            raise UsageError(f"model_cut cut_after={self.cut_after!r}", "give the tokens sent before the cut: 1 to 100")

    def plan(self) -> dict[str, Any]:
        return {"fault": "cut", "cut_after": self.cut_after}

    def confirm(self, t: Targets) -> str:
        # One streamed call through the app's own way in (the model proxy), read to its end.
        body = {
            "model": "confirm",
            "stream": True,
            "messages": [{"role": "user", "content": f"{PROBES} fault-confirm"}],
        }
        req = urllib.request.Request(
            t.stack.cfg.model_url + "/v1/chat/completions",
            json.dumps(body).encode(),
            {"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=5) as r:
            try:
                data, whole = r.read(), True
            except http.client.IncompleteRead as exc:
                data, whole = exc.partial, False
        events = data.count(b"data:")
        if whole or b"[DONE]" in data or not events:
            raise FaultNotConfirmed(f"{self.describe()}: a streamed call through the model proxy ended whole")
        return f"a streamed call through the model proxy stopped after {events} events, without its final one"
