"""A 2xx for a send made while Redis was unreachable, and the message is not stored."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, explained, few, register


@register("acked_while_unreachable", needs=("redis_unreachable",), explains_loss=True, after=("acked_too_fast",))
def diagnose(ev: Evidence) -> Diagnosis | None:
    pool = [
        j
        for j in ev.judged
        if j.trial.fault == "down" or (j.trial.fault == "drop" and j.trial.fault_params.get("stream") == "upstream")
    ]
    # An app proven to answer before its write (acked_too_fast) answers 200 for a write that
    # fails later: those trials are that cause, not a swallowed error.
    early = explained(ev.found, "acked_too_fast")
    hit = []
    for j in pool:
        if j.id in early:
            continue
        s = next((s for s in j.trial.sends if s.under_fault), None)
        if s is not None and s.outcome == "ok" and s.turn in j.lost_user:
            hit.append((j, s))
    if not hit:
        return None
    j0, s0 = hit[0]
    return Diagnosis(
        "acked_while_unreachable",
        "acknowledged while Redis was unreachable and never stored: the write's error is swallowed "
        "(logged or ignored) and a success returned",
        f"with the Redis link {j0.trial.fault} for one send, it answered {s0.status} in {s0.ms or 0:.0f} ms "
        f"and the message is absent from the final history (trials {few([j.id for j, _ in hit])})",
        len(hit),
        len(pool),
        [j.id for j, _ in hit],
    )
