"""What a black-box trial records, and the per-trial check: pure data and pure functions, so
the diagnoses can be unit-tested with hand-written records."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Outcome = Literal["ok", "fail", "info"]


@dataclass
class SendRec:
    turn: int
    text: str                      # unique per trial: the lab matches rows by this text
    outcome: Outcome               # ok 2xx / fail 4xx (not applied) / info (5xx, timeout: unknown)
    status: int | None
    ms: float
    t: float                       # wall clock when the answer came (s)
    html: bool = False             # an HTML error page instead of the spec's JSON
    error: str | None = None
    under_fault: bool = False      # a one-shot fault was armed around this send
    streamed: bool = False         # asked for a streamed answer ([stream]); ms = to its end
    cut: bool | None = None        # streamed and cut after its first chunk (ms = to that chunk);
                                   # False: the whole answer had come in that chunk (nothing cut)


@dataclass
class Read:
    """One GET of the history: status, and the rows if the body was of the spec's form."""

    status: int | None
    rows: list[tuple[str, str]] | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300 and self.rows is not None


@dataclass
class TtlObs:
    turn: int
    t: float        # s, wall clock of the observation
    pttl_ms: int    # -2 no key, -1 no TTL
    length: int     # elements of the key (LLEN, or 0 when absent)
    rtt_ms: float = 0.0  # the PTTL read's round trip: how well `t` is known


@dataclass
class TrialRec:
    trial_id: str
    fault: str
    fault_params: dict[str, Any]
    refresh: str
    turns: int
    fault_turn: int | None = None
    fault_evidence: str | None = None
    sends: list[SendRec] = field(default_factory=list)
    page_after: Read | None = None        # what the page showed after the refresh point
    final: Read | None = None             # healed, quiescent: the truth as the app serves it
    history_reads: list[int | None] = field(default_factory=list)  # statuses of every GET
    ttl: list[TtlObs] = field(default_factory=list)
    cookie_persistent: bool | None = None
    # With [redis] key: the key after the final read (type, PTTL, value count, and which turns'
    # user texts occur in its raw values -- the storage format stays the app's business).
    redis_final: dict[str, Any] | None = None
    # The final read never settled because successive reads went back to earlier contents
    # (nothing being written): {"reads", "changes", "returns", "rows": [row counts seen]}.
    flapping: dict[str, Any] | None = None
    unknown: str | None = None            # why the trial proves nothing, if it does not
    seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Check:
    """The anomalies of one trial. Turn numbers in each list."""

    acked: list[int]
    lost_user: list[int]              # acknowledged, user row absent at the end
    reply_missing: list[int]          # acknowledged, user row stored, no reply row after it
    duplicated: list[int]             # a row of the turn stored more than once
    phantom: list[int]                # 5xx / timeout answer, yet the user row is stored
    amnesia: bool                     # the page after the refresh showed none of the acked turns
    page_failed: bool                 # ... because its history read failed
    stale: list[int]                  # missing on the page after the refresh, present at the end

    def anomalies(self) -> dict[str, int]:
        return {"lost": len(set(self.lost_user) | set(self.reply_missing)),
                "duplicated": len(self.duplicated), "phantom_fail": len(self.phantom),
                "amnesia": int(self.amnesia), "stale": len(self.stale)}

    @property
    def failed(self) -> bool:
        return any(self.anomalies().values())


def per_turn(rows: list[tuple[str, str]], sends: list[SendRec], user_role: str,
             assistant_role: str) -> tuple[dict[int, int], dict[int, int]]:
    """(user rows per turn, reply rows per turn): a reply belongs to the last user row before it."""
    users = {s.turn: 0 for s in sends}
    replies = {s.turn: 0 for s in sends}
    current: int | None = None
    for role, content in rows:
        if role == user_role:
            current = next((s.turn for s in sends if s.text in content), None)
            if current is not None:
                users[current] += 1
        elif role == assistant_role and current is not None:
            replies[current] += 1
    return users, replies


def check(rec: TrialRec, user_role: str = "user", assistant_role: str = "assistant") -> Check | None:
    """None when the trial is unknown (no final read, nothing acknowledged)."""
    acked = [s.turn for s in rec.sends if s.outcome == "ok"]
    if rec.unknown or rec.final is None or not rec.final.ok or not acked:
        return None
    users, replies = per_turn(rec.final.rows or [], rec.sends, user_role, assistant_role)
    lost_user = [t for t in acked if users[t] == 0]
    reply_missing = [t for t in acked if users[t] > 0 and replies[t] == 0]
    duplicated = [s.turn for s in rec.sends if users[s.turn] > 1 or replies[s.turn] > 1]
    # An error whose write was applied counts only where nothing excuses it: under a dropped or
    # refused Redis link it is the honest "outcome unknown".
    excused = rec.fault not in ("none", "latency")
    phantom = [s.turn for s in rec.sends if s.outcome == "info" and users[s.turn] > 0
               and not s.under_fault and not excused]
    amnesia = page_failed = False
    stale: list[int] = []
    if rec.page_after is not None:
        if rec.page_after.ok:
            shown, _ = per_turn(rec.page_after.rows or [], rec.sends, user_role, assistant_role)
            amnesia = not any(shown[t] for t in acked)
            # A reply cut mid-stream may still be completing on the server at the refresh:
            # missing then and stored later is not a stale read.
            cut = {s.turn for s in rec.sends if s.cut}
            stale = [t for t in acked if shown[t] == 0 and users[t] > 0 and t not in cut]
        else:
            amnesia = page_failed = True
    if amnesia:
        stale = []  # the whole history missing is amnesia, not a stale read of some turns
    return Check(acked, lost_user, reply_missing, duplicated, phantom, amnesia, page_failed, stale)
