"""5xx answers with no fault injected: the app breaks by itself, intermittently.

Only an answer the app gave counts. A send with no answer at all is what the lab's own failed
step leaves too: on a loaded CI runner (2026-12-05) the lab's click on an app's own page sent no
request (the app's log holds none for that turn), and "no answer" was drawn against the app. Where
two mechanisms leave the same evidence it counts for neither."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, few, ids, register


def _failed(status: int | None) -> bool:
    return status is not None and status >= 500


@register("errors_without_fault", needs=("no_fault",))
def diagnose(ev: Evidence) -> Diagnosis | None:
    pool = [t for t in ev.trials if t.fault == "none" and t.sends]
    hit = [t for t in pool if any(_failed(s.status) for s in t.sends)]
    if not hit:
        return None
    bad = sum(1 for t in pool for s in t.sends if _failed(s.status))
    total = sum(len(t.sends) for t in pool)
    return Diagnosis(
        "errors_without_fault",
        "requests fail intermittently with no fault injected: the app breaks by itself "
        "(e.g. a Redis client bound to another event loop)",
        f"{bad} of {total} sends answered 5xx with the Redis link healthy (trials {few(ids(hit))})",
        len(hit),
        len(pool),
        ids(hit),
    )
