"""Under injected latency L, a reply in under L ms cannot have waited for any Redis write."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, register


@register("acked_too_fast", needs=("latency",))
def diagnose(ev: Evidence) -> Diagnosis | None:
    pool = [j for j in ev.judged if j.trial.fault == "latency"]
    hit = []
    for j in pool:
        p = j.trial.fault_params
        lat = int(p.get("latency_ms", 0)) - int(p.get("jitter_ms", 0))
        fast = [s for s in j.trial.sends if s.outcome == "ok" and s.ms is not None and s.ms < lat]
        if fast:
            hit.append((j, fast[0], lat))
    if not hit:
        return None
    j0, s0, lat = hit[0]
    return Diagnosis(
        "acked_too_fast",
        "acknowledged before the Redis write could have completed: the reply does not wait for the write",
        f"under {lat} ms of injected Redis latency a send was acknowledged in {s0.ms:.0f} ms "
        f"(trial {j0.id}, turn {s0.turn}); in {len(hit)}/{len(pool)} latency trials",
        len(hit), len(pool), [j.id for j, _, _ in hit])
