"""Every message stored, but not in the order it was sent: writes that race each other.

A race reverses some pairs of rows, at some turns, in some trials. A history that is mirrored in
every trial is a fixed reversal (history_reversed): its trials are not this cause's evidence."""

from __future__ import annotations

from lab.model.placement import place
from lab.diagnoses import Diagnosis, Evidence, Judged, few, ids, register
from lab.diagnoses.history_reversed import order_pairs
from lab.diagnoses.rewrite_window import rewritten_together


@register("writes_out_of_order", after=("history_reversed", "rewrite_window"))
def diagnose(ev: Evidence) -> Diagnosis | None:
    reversal = any(d.code == "history_reversed" for d in ev.found)
    # Under a fixed reversal, a reordered trial counts here only if some of its pairs kept their
    # order (a mirror reverses them all): a race beside the reversal.
    hit = [
        j
        for j in ev.judged
        if j.result.reordered
        and not (reversal and order_pairs(j.trial, j.trial.final_rows or [])[0] == 0)
        and not rewritten_together(ev, j)
    ]
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
