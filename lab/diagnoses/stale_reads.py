"""Right after the refresh the page misses acknowledged turns that the settled history has."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, Judged, explained, ids, register
from lab.model.store import held_before_read, rewrite_gaps, stored_late


def _explained_turns(j: Judged) -> set[int]:
    return set(stored_late(j.trial)) | set(rewrite_gaps(j.trial)) | set(held_before_read(j.trial, j.stale))


@register(
    "stale_reads",
    needs=("page",),
    after=("stored_after_answer", "rewrite_window", "history_from_copy", "history_from_another_key"),
)
def diagnose(ev: Evidence) -> Diagnosis | None:
    # A turn the store's record shows written after its answer, or deleted and not yet written
    # back, is missing from a page read in between for that reason: stored_after_answer or
    # rewrite_window names the cause, a stale cache is not it; one the key held before the read
    # left is history_from_copy's.
    late = explained(ev.found, "stored_after_answer", "rewrite_window")
    late |= {i for d in ev.found if d.code == "history_from_copy" for i in d.trials}
    elsewhere = explained(ev.found, "history_from_another_key")  # read from another key: no stale copy
    hit = [
        j
        for j in ev.judged
        if j.stale and j.id not in elsewhere and not (j.id in late and set(j.stale) <= _explained_turns(j))
    ]
    if not hit:
        return None
    # An after_ack trial whose reload came too late did not test the window: a stale read it
    # shows still counts, its absence says nothing.
    pool = [j for j in ev.judged if j in hit or not j.trial.reload_window_missed()]
    missed = len(ev.judged) - len(pool)
    j0 = hit[0]
    every = not j0.result.stale
    return Diagnosis(
        "stale_reads",
        "stale reads that later heal: right after the refresh the page misses acknowledged turns "
        "that the settled history has",
        f"in {len(hit)}/{len(pool)} trials, e.g. trial {j0.id} turns {j0.stale}"
        f"{' (the whole history: the page showed none of them)' if every else ''} "
        f"({j0.trial.fault} / {j0.trial.refresh}"
        + (f", the reload {j0.trial.refresh_delay_ms:.0f} ms after the answer" if j0.trial.refresh_delay_ms else "")
        + ")"
        + (f"; {missed} after_ack trials reloaded too late to test the window (not counted)" if missed else ""),
        len(hit),
        len(pool),
        ids(hit),
    )
