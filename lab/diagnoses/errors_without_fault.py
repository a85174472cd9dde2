"""5xx / failed requests with no fault injected: the app breaks by itself, intermittently."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, few, ids, register


@register("errors_without_fault", needs=("no_fault",))
def diagnose(ev: Evidence) -> Diagnosis | None:
    pool = [t for t in ev.trials if t.fault == "none" and t.sends]
    hit = [t for t in pool if any(s.status is None or s.status >= 500 for s in t.sends)]
    if not hit:
        return None
    bad = sum(1 for t in pool for s in t.sends if s.status is None or s.status >= 500)
    total = sum(len(t.sends) for t in pool)
    return Diagnosis(
        "errors_without_fault",
        "requests fail intermittently with no fault injected: the app breaks by itself "
        "(e.g. a Redis client bound to another event loop)",
        f"{bad} of {total} sends answered 5xx or nothing with the Redis link healthy (trials {few(ids(hit))})",
        len(hit),
        len(pool),
        ids(hit),
    )
