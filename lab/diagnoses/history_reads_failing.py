"""History reads fail with no fault injected; the page then shows an empty history."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, few, ids, register


def _bad(s: int | None) -> bool:
    return s is None or not 200 <= s < 300


@register("history_reads_failing", needs=("no_fault",))
def diagnose(ev: Evidence) -> Diagnosis | None:
    pool = [t for t in ev.trials if t.fault == "none" and t.history_reads]
    bad = [s for t in pool for s in t.history_reads if _bad(s)]
    if not bad:
        return None
    hit = [t for t in pool if any(_bad(s) for s in t.history_reads)]
    reads = sum(len(t.history_reads) for t in pool)
    amnesia = [j for j in ev.judged if j.result.page_failed and j.trial.fault == "none"]
    return Diagnosis(
        "history_reads_failing",
        "history reads fail intermittently with no fault injected; the page then shows an empty "
        "history (amnesia) although the conversation is stored",
        f"{len(bad)} of {reads} GETs of the history failed ({', '.join(sorted({str(s) for s in bad}))}); "
        f"the page after a refresh showed nothing in {len(amnesia)} trials whose history was intact "
        f"(trials {few(ids(hit))})",
        len(hit),
        len(pool),
        ids(hit),
    )
