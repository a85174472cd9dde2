"""The checker: a pure function from one trial's history to its anomalies and verdict -- the one
checker of `lab chaos`, `lab replay`, `lab investigate` and the lessons.

Semantics (design: "Checker semantics"): a turn is the user message and its reply; both rows
must be in the final read once the turn was acknowledged (``ok``). ``info`` sends may or may
not have landed (allowed either way); ``fail`` sends must not have landed.

Matching a stored row to a message: by id where the rows carry ids; otherwise by (role, text,
occurrence) -- a user row by the text sent, a reply row by the reply text the answer carried --
so two equal reply texts are two rows, not a duplicate and a loss. Where equal texts leave a
choice, a reply belongs to the message whose question is the nearest stored before it; where the
reply's text is not known, by that position alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from lab.model import context, refusal
from lab.model.history import Row, Trial
from lab.model.placement import ROLES, Placement, _Msg, _messages, place

Validity = Literal["valid", "invalid", "unknown"]
ANOMALIES = (
    "lost",
    "lost_update",
    "stale",
    "duplicated",
    "reordered",
    "unexpected",
    "expired",
    "amnesia",
    "history_failed",
    "phantom_fail",
)
# Anomalies that make a trial invalid. phantom_fail on an ``info`` send (a 5xx whose write had
# landed) is reported but allowed: the outcome of an info send is unknown by definition.
INVALIDATING = ("lost", "duplicated", "reordered", "unexpected", "expired", "amnesia", "history_failed")


@dataclass
class Result:
    validity: Validity
    attempted: int = 0  # distinct message ids sent
    acknowledged: int = 0  # distinct ids with an ok send
    sends: int = 0
    acked_sends: int = 0
    acked: list[str] = field(default_factory=list)  # ids with an ok send, in send order
    lost: dict[str, list[str]] = field(default_factory=lambda: {r: [] for r in ROLES})
    # Lost turns that were in flight together with another acknowledged turn whose row of the same
    # role is stored: the trace of a write that overwrote a concurrent one (a lost update). Also
    # counted in ``lost``.
    lost_update: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    # A reply cut mid-stream, missing from the page right after the refresh and stored when the
    # history settled: what the user saw, not loss (a display finding, not an anomaly).
    cut_shown_missing: list[str] = field(default_factory=list)
    # A reply cut mid-stream never stored while its question is: the app drops a reply its client
    # left (generation cancelled on disconnect, the save after the stream's loop). A choice many
    # correct apps make -- the question, the part a user wrote, is kept -- so a finding, not loss
    # (an independently written Fastify app, correct by its author's key, 2026-12-05).
    cut_reply_dropped: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)  # "id:role" stored more than once
    reordered: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    expired: bool = False
    amnesia: bool = False
    page_failed: bool = False  # the page's own history read failed: an error on the page,
    # not a forgotten conversation (anomaly history_failed)
    phantom_fail: list[str] = field(default_factory=list)
    # Sends whose model call was not given every turn acknowledged before it (lab.model.context):
    # what the model was told, beside what the page shows and Redis holds. A finding, not an
    # anomaly: an app's design may tell it less (a context window), which only a diagnosis
    # over many calls can tell apart (lab.diagnoses.model_told_less); `lab chaos --model`
    # attributes its rate to a defect (lab.model.attribution.METRICS).
    told_less: list[str] = field(default_factory=list)
    phantom_fail_definite: list[str] = field(default_factory=list)  # on ``fail`` sends: invalid
    reasons: list[str] = field(default_factory=list)

    def anomalies(self) -> dict[str, int]:
        """Counts per anomaly (lost counts turns with any row missing)."""
        return {
            "lost": len(self.lost_turns),
            "lost_update": len(self.lost_update),
            "lost_user": len(self.lost["user"]),
            "lost_assistant": len(self.lost["assistant"]),
            "stale": len(self.stale),
            "duplicated": len(self.duplicated),
            "reordered": len(self.reordered),
            "unexpected": len(self.unexpected),
            "expired": int(self.expired),
            "amnesia": int(self.amnesia and not self.page_failed),
            "history_failed": int(self.page_failed),
            "phantom_fail": len(self.phantom_fail),
        }

    @property
    def history_failed(self) -> bool:
        return self.page_failed

    @property
    def lost_turns(self) -> list[str]:
        return list(dict.fromkeys(self.lost["user"] + self.lost["assistant"]))

    @property
    def reply_missing(self) -> list[str]:
        """Acknowledged, the user row stored, the reply row not."""
        return [i for i in self.lost["assistant"] if i not in self.lost["user"]]

    @property
    def duplicated_ids(self) -> list[str]:
        return sorted({d.rsplit(":", 1)[0] for d in self.duplicated})


NOTHING_ACKED = "no send was acknowledged: the trial exercised nothing"


# Chromium's failure of a request in flight when a network interface of the machine comes or goes.
NETWORK_CHANGED = "net::ERR_NETWORK_CHANGED"


def _nothing_acked(trial: Trial, why: str = "") -> str:
    """NOTHING_ACKED with how the sends ended (e.g. "5 sends: timeout x5"): a loaded machine's
    timeouts and a broken app's 5xx read differently."""
    counts: dict[str, int] = {}
    for s in trial.sends:
        name = s.reason or s.outcome or "?"
        counts[name] = counts.get(name, 0) + 1
    ended = ", ".join(f"{r} x{n}" for r, n in sorted(counts.items()))
    return f"{NOTHING_ACKED} ({len(trial.sends)} sends: {ended}{'; ' + why if why else ''})"


def _not_judged(trial: Trial) -> Result | None:
    """An unknown result when the trial cannot be judged at all, else None."""
    incomplete = [s.id for s in trial.sends if s.outcome is None]
    if incomplete:
        return Result("unknown", reasons=[f"sends never completed: {', '.join(incomplete)}"])
    if trial.unknown:
        return Result("unknown", reasons=[trial.unknown])
    if trial.final_rows is None:
        if trial.sends and not any(s.outcome == "ok" for s in trial.sends):
            # No send acknowledged, none seen by the backend (it logged no session to read):
            # the trial tested nothing -- that, not the missing read, is why (seen in CI: 1 of
            # 4 incident trials, every send failed).
            return Result("unknown", reasons=[_nothing_acked(trial, "no session to read")])
        # Why it is missing (no session to read, the read's own error) goes with it.
        return Result("unknown", reasons=["the final read is missing", *trial.errors])
    if not trial.fault_confirmed:
        return Result("unknown", reasons=["the fault was not confirmed"])
    if not trial.preconditions_met:
        return Result("unknown", reasons=["the experiment's preconditions did not hold"] + trial.errors)
    return None


def check(trial: Trial) -> Result:
    """Anomalies of one trial. Never raises on odd input: see ``check_safe``."""
    early = _not_judged(trial)
    if early is not None:
        return early
    assert trial.final_rows is not None
    sends = trial.sends
    msgs = _messages(sends)
    order = [m.id for m in msgs]
    acked = [m.id for m in msgs if any(s.outcome == "ok" for s in m.sends)]
    res = Result(
        "valid",
        attempted=len(order),
        acknowledged=len(acked),
        sends=len(sends),
        acked_sends=sum(s.outcome == "ok" for s in sends),
        acked=acked,
    )
    placed = _stored(res, trial, msgs, trial.final_rows)
    res.told_less = list(dict.fromkeys(x.send for x in context.judge(trial) if x.told_less))
    if trial.page_after_refresh is not None:
        _shown(res, trial, placed)
    elif not trial.refresh_reached:
        res.reasons.append("the refresh point was not reached")
    read_dropped = NETWORK_CHANGED in (trial.page_error or "")
    bad = [
        a
        for a in INVALIDATING
        if getattr(res, a)
        and (a != "lost" or any(res.lost.values()))
        and (a != "amnesia" or not res.page_failed)
        and (a != "history_failed" or not read_dropped)
    ]
    if res.phantom_fail_definite:
        bad.append("phantom_fail")
    if why := refusal.misplaced(trial, trial.turns_of(res.lost["user"])):
        res.validity = "unknown"  # whatever it shows: it cannot say which send it tested
        res.reasons.append(why)
    elif bad:
        res.validity = "invalid"
        res.reasons.extend(bad)
    elif not trial.refresh_reached:
        res.validity = "unknown"
    elif why := _untested(trial, res, read_dropped):
        res.validity = "unknown"
        res.reasons.append(why)
    return res


def _untested(trial: Trial, res: Result, read_dropped: bool) -> str:
    """Why a trial that shows no anomaly tested nothing ("": it tested what it claims)."""
    if trial.sends and not res.acked:
        # Nothing acknowledged, nothing stored that should not be: no claim was tested.
        return _nothing_acked(trial)
    if read_dropped:
        # The page's history read after the refresh got no answer, and the browser names the
        # machine's network as why (below): an empty page for no doing of the app's. Seen in a CI
        # run beside other work: a correct app's read "TypeError: Failed to fetch".
        return f"the browser dropped the history read after the refresh ({NETWORK_CHANGED})"
    if dropped := [s for s in trial.sends if NETWORK_CHANGED in s.reason]:
        # The browser dropped a send when the machine's network changed (a Docker engine adding a
        # bridge beside the run): no answer, for no doing of the app's -- the turn it was to test
        # (a one-send fault's) tested nothing, and nothing else may stand for it. Seen in a CI run
        # beside the compose tests: a swallowed_errors trial under `down` judged valid, its
        # faulted send dropped so.
        return (
            f"the browser dropped turn {dropped[0].turn}'s request ({NETWORK_CHANGED}: the machine's network changed)"
        )
    return ""


def _stored(res: Result, trial: Trial, msgs: list[_Msg], final: list[Row]) -> dict[str, Placement]:
    """What the final read says: lost, duplicated, unexpected, expired, reordered, lost updates,
    phantom failures. Returns where each message's rows are."""
    sends, acked = trial.sends, res.acked
    by_id = {m.id: m for m in msgs}
    failed_only = [m.id for m in msgs if all(s.outcome == "fail" for s in m.sends)]
    info_only = [m.id for m in msgs if m.id not in acked and m.id not in failed_only]
    placed, unexpected = place(final, sends)
    cut = {s.id for s in sends if s.cut}
    for i in acked:
        if not placed[i].user:
            res.lost["user"].append(i)
        if not placed[i].reply:
            dropped = i in cut and placed[i].user
            (res.cut_reply_dropped if dropped else res.lost["assistant"]).append(i)
    res.duplicated = [
        f"{m.id}:{role}"
        for m in msgs
        for role, n in (("user", len(placed[m.id].user)), ("assistant", len(placed[m.id].reply)))
        if n > 1
    ]
    res.unexpected = sorted({final[p].id for p in unexpected})
    res.expired = trial.key_expired and bool(res.lost["user"] or res.lost["assistant"])
    res.reordered = _reordered(msgs, placed)
    res.lost_update = [
        i
        for i in res.lost_turns
        if any(
            o.id != i
            and o.id in acked
            and _concurrent(by_id[i], o)
            and any(
                i in res.lost[role] and getattr(placed[o.id], "user" if role == "user" else "reply") for role in ROLES
            )
            for o in msgs
        )
    ]
    stored_users = {m.id for m in msgs if placed[m.id].user}
    answered = {s.id for s in sends if s.status is not None}
    res.phantom_fail = [i for i in failed_only + info_only if i in stored_users and i in answered]
    res.phantom_fail_definite = [i for i in failed_only if i in stored_users]
    return placed


def _shown(res: Result, trial: Trial, placed: dict[str, Placement]) -> None:
    """What the page showed after the refresh: amnesia (nothing acknowledged shown), a failed
    history read, stale reads."""
    assert trial.page_after_refresh is not None
    shown, _ = place(trial.page_after_refresh, trial.sends)
    before = [i for i in res.acked if _acked_before_refresh(trial, i)]
    cut = {s.id for s in trial.sends if s.cut}
    res.amnesia = bool(before) and not any(shown[i].user for i in before)
    res.page_failed = res.amnesia and trial.page_error is not None
    if not res.amnesia:
        # A reply cut mid-stream may still be completing at the refresh: missing then and
        # stored later is not a stale read. The whole history missing is amnesia, not stale.
        res.stale = [
            i
            for i in before
            if i not in cut and ((not shown[i].user and placed[i].user) or (not shown[i].reply and placed[i].reply))
        ]
        res.cut_shown_missing = [i for i in before if i in cut and not shown[i].reply and placed[i].reply]


def precedes(a: _Msg, b: _Msg) -> bool:
    """Every send of ``a`` had its answer before any send of ``b`` left: a before b for sure.
    Messages that were in flight together (two tabs, a double submit) are not ordered."""
    done = [s.t_complete for s in a.sends]
    if any(t is None for t in done):
        return False
    return max(t for t in done if t is not None) <= min(s.t_invoke for s in b.sends)


def _concurrent(a: _Msg, b: _Msg) -> bool:
    return not precedes(a, b) and not precedes(b, a)


def _reordered(msgs: list[_Msg], placed: dict[str, Placement]) -> list[str]:
    """Messages stored out of the order they were sent, within the conversation: a message's
    question stored above that of a message answered before it was sent, its reply stored
    before its question, or its question and reply split by a row of a message sent only after
    it was answered. Turns in flight together (two tabs) may interleave in any order."""
    first = {m.id: (min(placed[m.id].user, default=None), min(placed[m.id].reply, default=None)) for m in msgs}
    out: list[str] = []
    stored = [m for m in msgs if first[m.id][0] is not None]
    for m in stored:
        u = first[m.id][0]
        assert u is not None
        # stored above a message that was answered before this one was sent
        if any(precedes(o, m) and (first[o.id][0] or 0) > u for o in stored if o is not m):
            out.append(m.id)
    for m in msgs:
        u, a = first[m.id]
        if m.id in out or u is None or a is None:
            continue
        if a < u:
            out.append(m.id)  # the reply above its question
            continue
        between = [o for o in msgs if o is not m and any(p is not None and u < p < a for p in first[o.id])]
        if any(precedes(m, o) for o in between):
            out.append(m.id)  # another, later turn stored inside this one
    return [m.id for m in msgs if m.id in out]


def _acked_before_refresh(trial: Trial, mid: str) -> bool:
    """Was this id acknowledged before the refresh? (Turns after it are not on the page.)"""
    refresh_t = next((e["t"] for e in trial.events if e.get("kind") == "refresh"), None)
    if refresh_t is None:
        return True
    return any(
        s.id == mid and s.outcome == "ok" and s.t_complete is not None and s.t_complete <= refresh_t
        for s in trial.sends
    )


def check_safe(trial: Trial) -> Result:
    """``check`` that never crashes a run: an exception becomes an unknown result with the error."""
    try:
        return check(trial)
    except Exception as exc:  # the checker is a measuring instrument: report, don't abort
        return Result("unknown", reasons=[f"checker error: {type(exc).__name__}: {exc}"])
