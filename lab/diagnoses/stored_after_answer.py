"""The store's record shows an acknowledged turn's row reaching Redis only after its answer:
the reply did not wait for the write (a background task, a thread, a queue)."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, few, ids, register
from lab.model.store import comparable, stored_late


@register("stored_after_answer", needs=("store",), explains_loss=True)
def diagnose(ev: Evidence) -> Diagnosis | None:
    # Its pool: trials whose record holds the write of some turn acknowledged whole.
    pool = [j for j in ev.judged if j.trial.store is not None and comparable(j.trial)]
    hit = [(j, late) for j in pool if (late := stored_late(j.trial))]
    if not hit:
        return None
    j0, late0 = hit[0]
    turn0 = min(late0)
    worst = max(ms for _, late in hit for ms in late.values())
    lost = [j for j, late in hit if set(j.lost_user) & set(late)]
    return Diagnosis(
        "stored_after_answer",
        "acknowledged before stored: Redis got the turn's rows only after the answer had reached the "
        "browser -- the reply does not wait for the write (a background task, a thread, a queue); a "
        "refresh in between shows the conversation without it, and a write that then fails loses it",
        f"in trial {j0.id} turn {turn0}'s rows reached Redis {late0[turn0]:.0f} ms after its answer "
        f"(MONITOR against the browser's answer time); in {len(hit)}/{len(pool)} trials whose record "
        f"holds an acknowledged turn's write, up to {worst:.0f} ms late"
        + (f"; acknowledged turns then missing in {len(lost)} of them ({few(ids(lost))})" if lost else ""),
        len(hit),
        len(pool),
        [j.id for j, _ in hit],
    )
