"""What one trial recorded: its sends (invoke -> ok | fail | info), what the page showed after
the refresh, and what Redis held at the end. Plain data, the checker's only input."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Outcome = Literal["ok", "fail", "info"]
OUTCOMES = ("ok", "fail", "info")


@dataclass
class Send:
    """One POST /chat as the browser saw it. ``ok`` = 2xx (for a stream: first token arrived);
    ``fail`` = 4xx, definitely not applied; ``info`` = 5xx, timeout or aborted: maybe applied."""

    id: str
    text: str
    turn: int
    outcome: Outcome | None = None     # None while in flight
    status: int | None = None
    reason: str = ""                   # e.g. "HTTP 503", "net::ERR_ABORTED"
    retry_of: str | None = None        # a user retry re-sends the same id
    t_invoke: float = 0.0
    t_complete: float | None = None

    def complete(self, outcome: Outcome, status: int | None, reason: str, t: float) -> None:
        if outcome not in OUTCOMES:
            raise ValueError(f"send {self.id}: outcome must be one of {OUTCOMES}, got {outcome!r}")
        if self.outcome is not None:
            raise ValueError(f"send {self.id} completed twice ({self.outcome}, then {outcome})")
        self.outcome, self.status, self.reason, self.t_complete = outcome, status, reason, t


@dataclass
class Row:
    id: str
    role: str


@dataclass
class Trial:
    trial_id: str
    sends: list[Send] = field(default_factory=list)
    page_after_refresh: list[Row] | None = None   # None: the refresh point was not reached
    final_rows: list[Row] | None = None            # None: Redis could not be read
    key_expired: bool = False                      # keyspace "expired" event for the key
    fault_confirmed: bool = True
    refresh_reached: bool = True
    preconditions_met: bool = True                 # e.g. ttl_elapse's pacing held
    errors: list[str] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)  # timeline for artifacts

    def as_json(self) -> dict[str, Any]:
        return asdict(self)
