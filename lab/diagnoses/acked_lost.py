"""Acknowledged messages lost in trials no more specific diagnosis explains."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, Judged, explained, ids, register


@register("acked_lost", last=True)
def diagnose(ev: Evidence) -> Diagnosis | None:
    claimed = explained(ev.found)
    # A turn the app's Redis key holds after the trial is not lost, whatever the history served:
    # a read path that hides it is history_hides_stored's, and beside a copy that lags the store
    # (a per-worker cache answering the settled read too: 1 of 35 trials, CI 2026-12-03) it
    # counts for neither.
    hit = [j for j in ev.judged if j.id not in claimed and _gone(j)]
    if not hit:
        return None
    return Diagnosis(
        "acked_lost",
        "acknowledged messages lost (no more specific cause identified)",
        f"in {len(hit)}/{len(ev.judged)} trials, e.g. trial {hit[0].id} ({hit[0].trial.fault} / "
        f"{hit[0].trial.refresh}) turns {_gone(hit[0])}",
        len(hit),
        len(ev.judged),
        ids(hit),
    )


def _gone(j: Judged) -> list[int]:
    """The lost turns the key does not hold either (all of them where the key was not read)."""
    return [t for t in j.lost_user if t not in j.hidden_stored]
