"""Requests answered with an error although their write was applied, with nothing to excuse it."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, Judged, few, ids, register


def _phantom(j: Judged) -> list[int]:
    # Only where nothing excuses the error: under a dropped or refused Redis link an error whose
    # write was applied is the honest "unknown outcome", not a defect.
    if j.trial.fault not in ("none", "latency"):
        return []
    return [t for t in j.turns(j.result.phantom_fail) if not any(s.under_fault for s in j.trial.sends if s.turn == t)]


@register("phantom_failures")
def diagnose(ev: Evidence) -> Diagnosis | None:
    pool = [j for j in ev.judged if j.trial.fault in ("none", "latency")]
    hit = [j for j in pool if _phantom(j)]
    if not hit:
        return None
    sends = [s for j in hit for s in j.trial.sends if s.turn in _phantom(j) and s.outcome != "ok"]
    statuses = sorted({str(s.status or s.reason) for s in sends})
    html = sum(s.html for s in sends)
    return Diagnosis(
        "phantom_failures",
        "requests answered with an error although their write was applied (the user sees "
        '"failed", a retry would store it twice)',
        f"{len(sends)} sends answered {', '.join(statuses)}"
        + (f" ({html} as HTML error pages)" if html else "")
        + f" and their message is in the final history (trials {few(ids(hit))})",
        len(hit),
        len(pool),
        ids(hit),
    )
