"""ttl_elapse: the conversation runs past 2 x a short TTL, with gaps under TTL/2.

A TTL renewed on every write keeps the conversation; a TTL set once loses it. The short TTL
travels with each request (X-Lab-Ttl-Ms); the schedule paces the turns (``min_gap_ms``).
``span_pct`` (a window sweep, lab window --vary age_ttl_pct) sets the conversation's age at the
refresh instead: its first write to the final read spans span_pct % of the TTL, up to SLACK_PCT
more (less just under the TTL: ``slack_pct``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from lab.common.errors import UsageError
from lab.faults.base import Fault, FaultNotConfirmed, Targets, register
from lab.common.http import http_get


SLACK_PCT = 20


@register("ttl_elapse")
@dataclass
class TtlElapse(Fault):
    summary = "short TTL (ttl_ms) and a conversation longer than 2 x TTL, gaps under TTL/2"
    ttl_ms: int = 2000
    span_pct: int = 0  # 0: past 2 x TTL (the default experiment); else the age, % of the TTL

    def check(self) -> None:
        if not 200 <= self.ttl_ms <= 60_000:
            raise UsageError(f"ttl_elapse.ttl_ms={self.ttl_ms} is out of range [200, 60000]")
        if self.span_pct and not 10 <= self.span_pct <= 400:
            raise UsageError(f"ttl_elapse.span_pct={self.span_pct} is out of range [10, 400] (0: past 2 x TTL)")

    @property
    def min_gap_ms(self) -> int:
        """Pause between turns: under TTL/2 so a renewed TTL never lapses between writes."""
        return self.ttl_ms // 4

    def min_duration_ms(self) -> int:
        if self.span_pct:
            return self.ttl_ms * self.span_pct // 100
        return 2 * self.ttl_ms + self.ttl_ms // 4

    def check_pacing(
        self, write_times_s: list[float], expired_at_s: float | None = None, read_at_s: float | None = None
    ) -> str | None:
        """The experiment's precondition, from the backend's timestamps around each write: the
        conversation -- its first write to the lab's final read of the key -- spans 2 x TTL and
        no gap between writes reaches TTL/2. On a loaded machine a turn can take longer than
        planned; then the trial proves nothing (unknown). (The final read counts: a profile whose
        requests fail fast, skipping the model's latency, ends its writes early.)"""
        if len(write_times_s) < 2:
            return "too few writes to judge the pacing"
        times = sorted(write_times_s)
        gap_ms = max(b - a for a, b in zip(times, times[1:])) * 1000
        span_ms = (max(times[-1], read_at_s or 0.0) - times[0]) * 1000
        if gap_ms >= self.ttl_ms / 2:
            return f"a gap of {gap_ms:.0f} ms between writes reached TTL/2 ({self.ttl_ms // 2} ms)"
        if self.span_pct:
            want_ms, slack_ms = self.ttl_ms * self.span_pct / 100, self.ttl_ms * self.slack_pct() / 100
            if not want_ms <= span_ms <= want_ms + slack_ms:
                return (
                    f"the conversation spanned {span_ms:.0f} ms, not {self.span_pct} % of the TTL "
                    f"({want_ms:.0f}-{want_ms + slack_ms:.0f} ms)"
                )
        elif span_ms < 2 * self.ttl_ms:
            return f"the conversation spanned {span_ms:.0f} ms, under 2 x TTL ({2 * self.ttl_ms} ms)"
        # A key that expired a whole TTL after the last write was renewed by it, and the final
        # read simply came too late (seen on a loaded machine, where closing the browser took
        # seconds): no evidence either way. A TTL set once expires ~1 TTL *before* the last
        # write; TTL/2 after it is far from both.
        if expired_at_s is not None and (expired_at_s - times[-1]) * 1000 >= self.ttl_ms / 2:
            return (
                f"the key expired {(expired_at_s - times[-1]) * 1000:.0f} ms after the last "
                f"write, before the final read: a renewed TTL explains it"
            )
        return None

    def slack_pct(self) -> int:
        """How much older than span_pct % of the TTL the conversation may be at its final read:
        20 % (the refresh, page load, quiescence and final read after the age; a loaded machine
        overshot 10 % of an 8 s TTL by about 100 ms), never across the TTL itself -- an age under
        it stays at least 5 % under it, else a point would count a loss at the wrong side."""
        if self.span_pct >= 100:
            return SLACK_PCT
        return max(0, min(SLACK_PCT, 100 - 5 - self.span_pct))

    def headers(self) -> dict[str, str]:
        return {"X-Lab-Ttl-Ms": str(self.ttl_ms)}

    def apply(self, t: Targets) -> None:
        pass

    def remove(self, t: Targets) -> None:
        pass

    def confirm(self, t: Targets) -> str:
        # The TTL is honoured only by a backend in lab mode; per-key evidence (PTTL <= ttl_ms)
        # is read by the driver after the first write of each trial.
        status, body = http_get(t.stack.cfg.backend_url + "/healthz")
        if status != 200 or not json.loads(body).get("lab_mode"):
            raise FaultNotConfirmed("the backend is not in lab mode: X-Lab-Ttl-Ms would be refused")
        return f"backend in lab mode: TTL {self.ttl_ms} ms per request"
