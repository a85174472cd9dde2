"""History reads fail with no fault injected; the page then shows an empty history.

Only an answer the app gave counts (a non-2xx status). A read with no answer is what the browser's
own failed fetch leaves too: on a loaded CI runner (2026-12-05) the correct built-in service's page
read "TypeError: Failed to fetch" once in 108 reads, and this was drawn against it. Where two
mechanisms leave the same evidence it counts for neither."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, few, ids, register


def _bad(s: int | None) -> bool:
    return s is not None and not 200 <= s < 300


@register("history_reads_failing", needs=("no_fault",))
def diagnose(ev: Evidence) -> Diagnosis | None:
    # A browser restart that lost a session-only cookie reads with no session: the app's 401 or
    # 404 there is session_cookie's evidence, not a failing read.
    pool = [t for t in ev.trials if t.fault == "none" and t.history_reads and not t.cookie_lost_at_restart]
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
