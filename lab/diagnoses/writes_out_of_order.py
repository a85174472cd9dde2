"""Every message stored, but not in the order it was sent: writes that race each other."""

from __future__ import annotations

from lab.placement import place
from lab.diagnoses import Diagnosis, Evidence, Judged, few, ids, register


@register("writes_out_of_order")
def diagnose(ev: Evidence) -> Diagnosis | None:
    hit = [j for j in ev.judged if j.result.reordered]
    if not hit:
        return None
    j0 = hit[0]
    t0 = j0.turns(j0.result.reordered)
    above = [t for t in t0 if _reply_above(j0, t)]
    shape = (
        f"the reply of turn {above[0]} stored above its question"
        if above
        else f"turns {t0} stored out of the order they were sent in"
    )
    return Diagnosis(
        "writes_out_of_order",
        "writes stored out of the order they were made: the question and reply writes (or two turns' "
        "writes) run concurrently with nothing ordering them -- e.g. un-awaited or gathered writes on "
        "one event loop; after a refresh the user sees answers above their questions",
        f"e.g. trial {j0.id}: {shape}; in {len(hit)}/{len(ev.judged)} trials (trials {few(ids(hit))})",
        len(hit),
        len(ev.judged),
        ids(hit),
    )


def _reply_above(j: Judged, turn: int) -> bool:
    s = j.send(turn)
    if s is None or j.trial.final_rows is None:
        return False
    p = place(j.trial.final_rows, j.trial.sends)[0][s.id]
    return bool(p.user and p.reply and min(p.reply) < min(p.user))
