"""Messages stored twice after a connection drop: a non-idempotent append retried blindly."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, ids, register


@register("duplicates_after_drop", needs=("drop",))
def diagnose(ev: Evidence) -> Diagnosis | None:
    drop = [j for j in ev.judged if j.trial.fault == "drop"]
    hit = [j for j in drop if j.result.duplicated]
    if not hit:
        return None
    return Diagnosis(
        "duplicates_after_drop",
        "messages stored twice after a connection drop: a non-idempotent append is retried "
        "(blindly) when the reply to an applied write is lost",
        f"turns stored more than once in {len(hit)}/{len(drop)} trials with a one-shot connection "
        f"reset on the Redis link, e.g. trial {hit[0].id} turns {hit[0].turns(hit[0].result.duplicated_ids)}",
        len(hit),
        len(drop),
        ids(hit),
    )
