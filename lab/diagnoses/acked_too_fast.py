"""Under injected latency L, a reply in under L ms cannot have waited for any Redis write.

What else answers that fast: an app that keeps the conversation elsewhere (a database) with
Redis a cache in front of it -- its send route writes nothing to the key to wait for. The
store's record tells them apart where the run has one: a trial whose record shows the key filled
from elsewhere (lab.model.store.filled_on_miss) has a cache for a key, and a turn the app never
wrote to the key that the settled history holds was stored elsewhere -- neither was written behind
the answer's back. (Where such a cache hides turns, the loss stays unexplained: said, not named.)"""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, Judged, few, ids, register
from lab.model.store import filled_on_miss, first_writes


def kept_elsewhere(j: Judged) -> set[int]:
    """The turns the record shows no write of to the key but a fill's, and that were not lost."""
    if j.trial.store is None:
        return set()
    written, lost = first_writes(j.trial), set(j.lost_user)
    return {s.turn for s in j.trial.sends} - set(written) - lost


@register("acked_too_fast", needs=("latency",), explains_loss=True)
def diagnose(ev: Evidence) -> Diagnosis | None:
    pool = [j for j in ev.judged if j.trial.fault == "latency" and not filled_on_miss(j.trial)]
    hit = []
    for j in pool:
        lat, elsewhere = j.trial.latency_floor_ms, kept_elsewhere(j)
        fast = [
            s
            for s in j.trial.sends
            if s.outcome == "ok" and s.ms is not None and s.ms < lat and s.turn not in elsewhere
        ]
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
