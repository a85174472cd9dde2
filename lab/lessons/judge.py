"""The pass/fail judgement of a lesson's check: pure, from the cell's outcome alone. A pass needs
no trial showing the lesson's anomalies *and* a cell that was exercised (the fault confirmed,
enough trials with a verdict, most sends acknowledged: refusing every write is not a fix)."""

from __future__ import annotations

from dataclasses import dataclass, field

from lab.model.attribution import cell_stats
from lab.lessons import MIN_TRIALS, Lesson
from lab.model.outcome import CellOutcome, TrialOutcome
from lab.model.stats import fmt_rate, wilson

MIN_ACK_RATIO = 0.8  # a fix that refuses the writes loses nothing and proves nothing
METRIC_WORDS = {
    "lost": "acknowledged turns lost",
    "duplicated": "rows stored twice",
    "expired": "conversation lost to its TTL",
    "amnesia": "empty history after the refresh",
    "phantom_fail": "answered as failed although stored",
    "5xx": "requests answered 5xx",
}


def problems(lesson: Lesson, t: TrialOutcome) -> list[str]:
    """The lesson's forbidden anomalies this trial shows (unknown trials show none)."""
    if t.result.validity == "unknown":
        return []
    counts = t.result.anomalies()
    found = [m for m in lesson.forbid if m != "5xx" and counts.get(m)]
    if "5xx" in lesson.forbid and any(s.status is not None and s.status >= 500 for s in t.trial.sends):
        found.append("5xx")
    return found


@dataclass
class Judgement:
    passed: bool
    lines: list[str] = field(default_factory=list)
    example: TrialOutcome | None = None


def judge(lesson: Lesson, outcome: CellOutcome, required: int = MIN_TRIALS) -> Judgement:
    """Pass only if the cell was exercised (fault confirmed, >= ``required`` trials with a
    verdict, none unknown, >= 80 % of sends acknowledged) and no trial shows a forbidden anomaly."""
    st = cell_stats(outcome)
    known = [t for t in outcome.trials if t.result.validity != "unknown"]
    bad = [t for t in known if problems(lesson, t)]
    n = len(known)
    rates = [
        f"{m:<12} {fmt_rate(sum(m in problems(lesson, t) for t in known), n)}   ({METRIC_WORDS.get(m, m)})"
        for m in lesson.forbid
    ]
    acked = f"{st.acked_sends}/{st.sends} sends acknowledged"
    evidence = f"fault: {outcome.fault_evidence or outcome.fault_error or 'none needed'}"
    if bad:
        k = len(bad)
        lo, hi = wilson(k, n)
        head = (
            f"FAIL: the defect is still there: {k}/{n} trials show "
            f"{', '.join(sorted({p for t in bad for p in problems(lesson, t)}))} "
            f"(rate {k / n:.2f}, 95% CI [{lo:.2f}, {hi:.2f}])"
        )
        return Judgement(False, [head, *rates, acked, evidence], bad[0])
    reasons = []
    unknown = ""
    if st.unknown:
        why = sorted({r for t in outcome.trials if t.result.validity == "unknown" for r in t.result.reasons})
        unknown = f"{st.unknown} trial(s) unknown, excluded: {'; '.join(why)[:300]}"
    if st.status == "unexercised":
        reasons.append(st.reason)
    if n < required:
        reasons.append(f"only {n} trials gave a verdict, {required} needed" + (f" ({unknown})" if unknown else ""))
        unknown = ""
    if st.sends and st.acked_sends / st.sends < MIN_ACK_RATIO:
        reasons.append(f"only {acked}, under {MIN_ACK_RATIO:.0%}: refusing writes is not a fix")
    if reasons:
        return Judgement(
            False,
            [
                "FAIL: not exercised, so not a pass: " + "; ".join(reasons),
                *rates,
                acked,
                evidence,
                *filter(None, [unknown]),
            ],
        )
    hi = wilson(0, n)[1]
    return Judgement(
        True,
        [
            f"PASS: none of {', '.join(lesson.forbid)} in {n} trials (each rate 0/{n}, below {hi:.2f} at 95%)",
            *rates,
            acked,
            evidence,
            *filter(None, [unknown]),
        ],
    )


def describe(t: TrialOutcome) -> str:
    r = t.result
    assert t.plan is not None  # a lesson's trials are planned
    parts = [f"trial {t.trial_id} (seed {t.plan.seed})"]
    if r.lost["user"] or r.lost["assistant"]:
        ids = (r.lost["user"] or r.lost["assistant"])[0][:8]
        parts.append(
            f"lost {len(r.lost['user'])} user row(s) and {len(r.lost['assistant'])} "
            f"reply row(s) of acknowledged turns (e.g. message {ids}...)"
        )
    if r.duplicated:
        parts.append(f"stored twice: {r.duplicated}")
    if r.expired:
        parts.append("the key expired (keyspace event)")
    if r.amnesia:
        parts.append("the page showed none of the acknowledged turns after the refresh")
    fives = [f"{s.id}: HTTP {s.status}" for s in t.trial.sends if s.status and s.status >= 500]
    if fives:
        parts.append(f"5xx answers: {', '.join(fives[:3])}")
    if r.phantom_fail:
        parts.append(f"answered as failed but stored: {r.phantom_fail}")
    return "; ".join(parts)
