"""Every turn before a Redis restart missing afterwards: Redis runs without persistence."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, few, ids, register


@register("lost_on_redis_restart", needs=("redis_restart",), explains_loss=True)
def diagnose(ev: Evidence) -> Diagnosis | None:
    pool = [j for j in ev.judged if j.trial.fault == "redis_restart"]
    hit = [j for j in pool if j.lost_user and all(t < (j.trial.fault_turn or 0) for t in j.lost_user)]
    if not hit:
        return None
    return Diagnosis(
        "lost_on_redis_restart",
        "the conversation is lost when Redis restarts: Redis runs without persistence (environment)",
        f"every turn before the restart missing afterwards in {len(hit)}/{len(pool)} trials (trials {few(ids(hit))})",
        len(hit),
        len(pool),
        ids(hit),
    )
