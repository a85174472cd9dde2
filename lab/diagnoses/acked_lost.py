"""Acknowledged messages lost in trials no more specific diagnosis explains."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, explained, ids, register


@register("acked_lost", last=True)
def diagnose(ev: Evidence) -> Diagnosis | None:
    claimed = explained(ev.found)
    hit = [j for j in ev.judged if j.lost_user and j.id not in claimed]
    if not hit:
        return None
    return Diagnosis(
        "acked_lost",
        "acknowledged messages lost (no more specific cause identified)",
        f"in {len(hit)}/{len(ev.judged)} trials, e.g. trial {hit[0].id} ({hit[0].trial.fault} / "
        f"{hit[0].trial.refresh}) turns {hit[0].lost_user}",
        len(hit),
        len(ev.judged),
        ids(hit),
    )
