"""The checker: a pure function from one trial's history to its anomalies and verdict.

Semantics (design: "Checker semantics"): a turn is the user message and its reply; both rows
must be in the final read once the turn was acknowledged (``ok``). ``info`` sends may or may
not have landed (allowed either way); ``fail`` sends must not have landed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from lab.history import Row, Trial

Validity = Literal["valid", "invalid", "unknown"]
ROLES = ("user", "assistant")
ANOMALIES = ("lost", "stale", "duplicated", "reordered", "unexpected", "expired", "amnesia",
             "phantom_fail")
# Anomalies that make a trial invalid. phantom_fail on an ``info`` send (a 5xx whose write had
# landed) is reported but allowed: the outcome of an info send is unknown by definition.
INVALIDATING = ("lost", "duplicated", "reordered", "unexpected", "expired", "amnesia")


@dataclass
class Result:
    validity: Validity
    attempted: int = 0                   # distinct message ids sent
    acknowledged: int = 0                # distinct ids with an ok send
    sends: int = 0
    acked_sends: int = 0
    lost: dict[str, list[str]] = field(default_factory=lambda: {r: [] for r in ROLES})
    stale: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)   # "id:role" stored more than once
    reordered: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    expired: bool = False
    amnesia: bool = False
    phantom_fail: list[str] = field(default_factory=list)
    phantom_fail_definite: list[str] = field(default_factory=list)  # on ``fail`` sends: invalid
    reasons: list[str] = field(default_factory=list)

    def anomalies(self) -> dict[str, int]:
        """Counts per anomaly (lost counts turns with any row missing)."""
        lost_turns = set(self.lost["user"]) | set(self.lost["assistant"])
        return {"lost": len(lost_turns), "lost_user": len(self.lost["user"]),
                "lost_assistant": len(self.lost["assistant"]), "stale": len(self.stale),
                "duplicated": len(self.duplicated), "reordered": len(self.reordered),
                "unexpected": len(self.unexpected), "expired": int(self.expired),
                "amnesia": int(self.amnesia), "phantom_fail": len(self.phantom_fail)}


def _key(r: Row) -> str:
    return f"{r.id}:{r.role}"


def check(trial: Trial) -> Result:
    """Anomalies of one trial. Never raises on odd input: see ``check_safe``."""
    sends = trial.sends
    incomplete = [s.id for s in sends if s.outcome is None]
    if incomplete:
        return Result("unknown", reasons=[f"sends never completed: {', '.join(incomplete)}"])
    if trial.final_rows is None:
        return Result("unknown", reasons=["the final Redis read is missing"])
    if not trial.fault_confirmed:
        return Result("unknown", reasons=["the fault was not confirmed"])
    if not trial.preconditions_met:
        return Result("unknown", reasons=["the experiment's preconditions did not hold"] + trial.errors)

    order: list[str] = []
    for s in sends:
        if s.id not in order:
            order.append(s.id)
    acked = [i for i in order if any(s.id == i and s.outcome == "ok" for s in sends)]
    failed_only = [i for i in order if all(s.outcome == "fail" for s in sends if s.id == i)]
    info_only = [i for i in order if i not in acked and i not in failed_only]
    res = Result("valid", attempted=len(order), acknowledged=len(acked), sends=len(sends),
                 acked_sends=sum(s.outcome == "ok" for s in sends))

    final = trial.final_rows
    stored = Counter(_key(r) for r in final)
    for i in acked:
        for role in ROLES:
            if stored[f"{i}:{role}"] == 0:
                res.lost[role].append(i)
    res.duplicated = sorted(k for k, n in stored.items() if n > 1)
    res.unexpected = sorted({r.id for r in final if r.id not in order})
    res.expired = trial.key_expired and bool(res.lost["user"] or res.lost["assistant"])

    # Order: ids in the final read must appear in send order, each user row before its reply.
    seen: list[str] = []
    for r in final:
        if r.id in order and r.id not in seen:
            seen.append(r.id)
    expected = [i for i in order if i in seen]
    if seen != expected:
        res.reordered = [i for i, j in zip(seen, expected) if i != j]
    for i in seen:
        roles = [r.role for r in final if r.id == i]
        if "assistant" in roles and "user" in roles and roles.index("assistant") < roles.index("user"):
            res.reordered.append(i)

    stored_ids = {r.id for r in final if r.role == "user"}
    res.phantom_fail = [i for i in failed_only + info_only
                        if i in stored_ids and any(s.id == i and s.status is not None for s in sends)]
    res.phantom_fail_definite = [i for i in failed_only if i in stored_ids]

    if trial.page_after_refresh is not None:
        shown = {_key(r) for r in trial.page_after_refresh}
        acked_before = [i for i in acked if _acked_before_refresh(trial, i)]
        res.stale = [i for i in acked_before
                     if any(f"{i}:{role}" not in shown and stored[f"{i}:{role}"] for role in ROLES)]
        res.amnesia = bool(acked_before) and not any(f"{i}:user" in shown for i in acked_before)
    elif not trial.refresh_reached:
        res.reasons.append("the refresh point was not reached")

    bad = [a for a in INVALIDATING if getattr(res, a) and (a != "lost" or any(res.lost.values()))]
    if res.phantom_fail_definite:
        bad.append("phantom_fail")
    if bad:
        res.validity = "invalid"
        res.reasons.extend(bad)
    elif not trial.refresh_reached:
        res.validity = "unknown"
    return res


def _acked_before_refresh(trial: Trial, mid: str) -> bool:
    """Was this id acknowledged before the refresh? (Turns after it are not on the page.)"""
    refresh_t = next((e["t"] for e in trial.events if e.get("kind") == "refresh"), None)
    if refresh_t is None:
        return True
    return any(s.id == mid and s.outcome == "ok" and s.t_complete is not None
               and s.t_complete <= refresh_t for s in trial.sends)


def check_safe(trial: Trial) -> Result:
    """``check`` that never crashes a run: an exception becomes an unknown result with the error."""
    try:
        return check(trial)
    except Exception as exc:  # the checker is a measuring instrument: report, don't abort
        return Result("unknown", reasons=[f"checker error: {type(exc).__name__}: {exc}"])
