"""A double click stored twice: the append is not idempotent by the message id the page sends.

Evidence only from double_submit trials: the same message, under the same id, sent twice with
both requests in flight together (confirmed, lab.model.concurrency) and stored twice. No connection
drop, no retry: the second copy can only come from an append that does not check the id.
"""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, few, ids, register


@register("double_submit_stored", needs=("double_submit",))
def diagnose(ev: Evidence) -> Diagnosis | None:
    pool = [
        j
        for j in ev.judged
        if j.trial.refresh == "double_submit" and j.trial.concurrent and j.trial.concurrent.get("in_flight_together")
    ]
    last = {j.id: {s.id for s in j.trial.sends if s.turn == j.trial.turns} for j in pool}
    hit = [j for j in pool if last[j.id] & set(j.result.duplicated_ids)]
    if not hit:
        return None
    j = hit[0]
    sends = [s for s in j.trial.sends if s.turn == j.trial.turns]
    c = j.trial.concurrent or {}
    return Diagnosis(
        "double_submit_stored",
        "a message sent twice at once under the same id (a double click) is stored twice: the "
        "append does not check the message id (an idempotency key), so any repeat -- a double "
        "click, a retry -- is a second copy",
        f"in {len(hit)}/{len(pool)} double-submit trials, e.g. trial {j.id}: both sends of turn "
        f"{j.trial.turns} answered ({', '.join(str(s.status) for s in sends)}), starts "
        f"{c.get('spread_ms')} ms apart ({c.get('where')} view), "
        f"its rows stored twice (trials {few(ids(hit))})",
        len(hit),
        len(pool),
        ids(hit),
    )
