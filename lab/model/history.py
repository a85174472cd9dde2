"""What one trial recorded -- the one trial model of `lab chaos`, `lab replay`, `lab investigate`
and the lessons: its sends (invoke -> ok | fail | info), what the page showed after the refresh,
and what was stored at the end. Plain data (no Playwright), the checker's only input.

The black-box parts (a send's reply text and time to answer, whether it was cut mid-stream or
armed under a one-shot fault; the trial's reads, TTL observations and key dump) are optional:
`lab chaos` knows its backend's ids and reads Redis itself, `lab investigate` sees only answers.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from collections.abc import Iterable
from typing import Any, Literal

Outcome = Literal["ok", "fail", "info"]
OUTCOMES = ("ok", "fail", "info")


@dataclass
class Send:
    """One chat request as the browser saw it. ``ok`` = 2xx (for a stream: first chunk arrived);
    ``fail`` = 4xx, definitely not applied; ``info`` = 5xx, timeout or aborted: maybe applied."""

    id: str
    text: str
    turn: int
    outcome: Outcome | None = None  # None while in flight
    status: int | None = None
    reason: str = ""  # e.g. "HTTP 503", "net::ERR_ABORTED"
    retry_of: str | None = None  # a user retry re-sends the same id
    t_invoke: float = 0.0
    t_complete: float | None = None
    # Black-box parts: what an answer alone tells.
    reply: str | None = None  # the reply's text in the answer (None: not known)
    ms: float | None = None  # invoke -> answer (a stream: -> its first chunk)
    html: bool = False  # an HTML error page instead of the API's JSON
    under_fault: bool = False  # a one-shot fault was armed around this send
    streamed: bool = False  # asked for a streamed answer
    cut: bool | None = None  # streamed and cut after its first chunk; False: the whole
    # answer had come in that chunk (nothing was cut)

    def complete(self, outcome: Outcome, status: int | None, reason: str, t: float) -> None:
        if outcome not in OUTCOMES:
            raise ValueError(f"send {self.id}: outcome must be one of {OUTCOMES}, got {outcome!r}")
        if self.outcome is not None:
            raise ValueError(f"send {self.id} completed twice ({self.outcome}, then {outcome})")
        self.outcome, self.status, self.reason, self.t_complete = outcome, status, reason, t


@dataclass
class Row:
    """One stored (or shown) message. ``id`` is "" where the API has no message ids: the checker
    then matches it by (role, text, occurrence)."""

    id: str
    role: str
    text: str = ""


@dataclass
class TtlObs:
    """The conversation key's PTTL after a send (black box: the lab reads its own Redis)."""

    turn: int
    t: float  # s, wall clock of the observation (the midpoint of its round trip)
    pttl_ms: int  # -2 no key, -1 no TTL
    length: int  # values in the key (0 when absent)
    rtt_ms: float = 0.0  # the PTTL read's round trip: how well `t` is known
    settled: bool = True  # the key did not change over the settle window around the read: no
    # write was in flight. An unsettled read says nothing about the TTL rule.


@dataclass
class Trial:
    trial_id: str
    sends: list[Send] = field(default_factory=list)
    page_after_refresh: list[Row] | None = None  # None: the refresh point was not reached
    final_rows: list[Row] | None = None  # None: the stored history could not be read
    key_expired: bool = False  # keyspace "expired" event for the key
    fault_confirmed: bool = True
    refresh_reached: bool = True
    preconditions_met: bool = True  # e.g. ttl_elapse's pacing held
    errors: list[str] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)  # timeline for artifacts
    # What was run (the diagnoses judge a trial by its experiment).
    fault: str = "none"
    fault_params: dict[str, Any] = field(default_factory=dict)
    refresh: str = "settled"
    turns: int = 0
    fault_turn: int | None = None
    fault_evidence: str | None = None
    # Black-box parts.
    page_error: str | None = None  # the page's history read after the refresh failed
    history_reads: list[int | None] = field(default_factory=list)  # statuses of every history GET
    ttl: list[TtlObs] = field(default_factory=list)
    cookie_persistent: bool | None = None
    # The session cookie's Path against the history and send routes (lab.investigate.browser.identity
    # cookie_scope): {name, path, history_path, covers_history, covers_send}; None: no cookie.
    cookie_scope: dict[str, Any] | None = None
    # The conversation's key after the final read: {key, type, pttl_ms, values, stored_turns}
    # (stored_turns: turns whose user text occurs in its raw values; the format is the app's).
    redis_final: dict[str, Any] | None = None
    # The store's record (lab.investigate.evidence.store): every command on the conversation's key during
    # the trial, [{t, conn, cmd, args, write, user: [turns], reply: [turns]}]; None: no record,
    # and store_note says why (MONITOR refused, a reconnection, no key known).
    store: list[dict[str, Any]] | None = None
    store_note: str | None = None
    # Turns whose user text a write put under another key during the trial: [{turn, key}].
    store_elsewhere: list[dict[str, Any]] = field(default_factory=list)
    # Keys of the conversation's shape (the spec's pattern, another id) the app read while the
    # page's read after the refresh was made: [{t, key, cmd}]; None: not followed.
    store_other_reads: list[dict[str, Any]] | None = None
    # What the model was told (lab.standin's record of the trial's calls): [{t_start, t_end,
    # protocol, stream, messages: [{role, text}], outcome, reply, ...}]; None: no stand-in.
    model_calls: list[dict[str, Any]] | None = None
    # The final read never settled because reads went back to earlier contents with nothing
    # written: {"reads", "changes", "returns", "rows": [row counts seen]}.
    flapping: dict[str, Any] | None = None
    unknown: str | None = None  # why the trial proves nothing, if it does not
    # two_tabs / double_submit: whether the last turn's two requests were in flight at once
    # (lab.model.concurrency: where it was seen, spread and overlap in ms).
    concurrent: dict[str, Any] | None = None
    # after_ack: from the last answer's end to the reload's history request leaving the page
    # (ms, the browser's clock); None where the refresh is not right after an answer.
    refresh_delay_ms: float | None = None
    seconds: float = 0.0
    seed: int | None = None

    @property
    def cookie_lost_at_restart(self) -> bool:
        """A browser restart that lost a session-only cookie: the page came back with no session
        (session_cookie's evidence; a read then answered 401/404 or from another, empty key is its
        doing, not the read path's)."""
        return self.refresh == "browser_restart" and self.cookie_persistent is False

    @property
    def texts(self) -> list[str]:
        """The trial's messages, in the order sent (each holds the trial's nonce: its own)."""
        return [s.text for s in self.sends]

    def turns_of(self, ids: Iterable[str]) -> list[int]:
        """The turns of these send ids, in order (an id no send has is none)."""
        turn = {s.id: s.turn for s in self.sends}
        return sorted({turn[i] for i in ids if i in turn})

    def mark(self, kind: str, at: float | None = None, **what: Any) -> None:
        """An event of the trial's own timeline (a refresh; ``phase``: where its wall time went,
        summed by lab bench), at ``at`` or now."""
        self.events.append({"t": at or time.time(), "kind": kind, **what})

    def history_read(self, status: int | None, before_sends: bool) -> None:
        """A history GET's status, as history_reads_failing counts it. A 4xx before the
        conversation's first send is left out: a REST app answers 404 for a conversation that
        does not exist yet (or 401 before a session does) -- its honest answer, not a failing read."""
        if not (before_sends and status is not None and 400 <= status < 500):
            self.history_reads.append(status)

    @property
    def latency_floor_ms(self) -> int:
        """The least latency the trial's fault added to each Redis reply (0 without one)."""
        if self.fault != "latency":
            return 0
        return int(self.fault_params.get("latency_ms", 0)) - int(self.fault_params.get("jitter_ms", 0))

    def reload_window_missed(self) -> bool:
        """An after_ack reload under latency that left the page later than the injected latency
        after the answer (or was not measured): a write made after the answer may have landed
        first, so the trial did not test that window."""
        lat = self.latency_floor_ms
        return (
            self.refresh == "after_ack" and lat > 0 and (self.refresh_delay_ms is None or self.refresh_delay_ms > lat)
        )

    def reload_delay_problem(self, planned_ms: int) -> str | None:
        """A window's point (lab window --target): the reload must have left the delay planned
        after the answer, give or take; else the trial claims a delay it did not have."""
        hi = planned_ms + max(50.0, planned_ms / 2)
        if self.refresh_delay_ms is not None and planned_ms <= self.refresh_delay_ms <= hi:
            return None
        return (
            f"the reload left {self.refresh_delay_ms} ms after the answer, planned {planned_ms} ms "
            f"(accepted {planned_ms}-{hi:.0f} ms)"
        )

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Trial":
        d = dict(d)
        d["sends"] = [Send(**s) for s in d.get("sends", [])]
        for k in ("page_after_refresh", "final_rows"):
            if d.get(k) is not None:
                d[k] = [Row(**r) for r in d[k]]
        d["ttl"] = [TtlObs(**o) for o in d.get("ttl", [])]
        return cls(**d)
