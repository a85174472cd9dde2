"""Under injected latency L, a reply in under L ms cannot have waited for any Redis write."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, few, ids, register


@register("acked_too_fast", needs=("latency",), explains_loss=True)
def diagnose(ev: Evidence) -> Diagnosis | None:
    pool = [j for j in ev.judged if j.trial.fault == "latency"]
    hit = []
    for j in pool:
        lat = j.trial.latency_floor_ms
        fast = [s for s in j.trial.sends if s.outcome == "ok" and s.ms is not None and s.ms < lat]
        if fast:
            hit.append((j, fast[0], lat))
    if not hit:
        return None
    j0, s0, lat = hit[0]
    # A reply that does not wait for the write also answers 200 for a write that then fails:
    # loss of exactly the turns acknowledged under a fault is this cause, not a second one.
    also = [
        j
        for j in ev.judged
        if j.trial.fault not in ("none", "latency")
        and j.lost_user
        and set(j.lost_user) <= {s.turn for s in j.trial.sends if s.under_fault and s.outcome == "ok"}
    ]
    return Diagnosis(
        "acked_too_fast",
        "acknowledged before the Redis write could have completed: the reply does not wait for the write",
        f"under {lat} ms of injected Redis latency a send was acknowledged in {s0.ms:.0f} ms "
        f"(trial {j0.id}, turn {s0.turn}); in {len(hit)}/{len(pool)} latency trials"
        + (
            f"; it also explains the turns acknowledged under a fault and never stored in {len(also)} "
            f"trials ({few(ids(also))})"
            if also
            else ""
        ),
        len(hit),
        len(pool),
        [j.id for j, _, _ in hit],
        also=ids(also),
    )
