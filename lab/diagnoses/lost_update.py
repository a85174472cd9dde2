"""Acknowledged turns overwritten by a concurrent one: a read-modify-write of the history.

Evidence only from trials whose last turn went out from two tabs at once, both requests in
flight together (confirmed by the lab, lab.model.concurrency), both acknowledged, and every earlier
turn -- sent one at a time -- stored: a loss confined to the concurrent turn, while the other
tab's row of the same role survived, is what a write based on a stale read of the history does.
"""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, Judged, few, ids, register
from lab.diagnoses.rewrite_window import rewritten_together
from lab.model.store import still_stored


def _confined(j: Judged) -> bool:
    """Lost updates, and no loss among the turns sent one at a time -- and not every "lost" row
    still in Redis by the store's record (appended, nothing after it that could take it out):
    the history did not show a row Redis holds, which is the read path's (a per-worker cache),
    not an overwrite."""
    r = j.result
    if not r.lost_update or set(r.lost_turns) - set(r.lost_update):
        return False
    return not all(still_stored(j.trial, i) for i in r.lost_update)


@register("lost_update", needs=("concurrent",), explains_loss=True, after=("rewrite_window",))
def diagnose(ev: Evidence) -> Diagnosis | None:
    pool = [
        j
        for j in ev.judged
        if j.trial.concurrent
        and j.trial.concurrent.get("in_flight_together")
        and len({s.id for s in j.trial.sends if s.outcome == "ok" and s.turn == j.trial.turns}) == 2
        # Two rewrites of the whole list overlapping is that diagnosis's (the store's record
        # shows the DELs): a lost row there is the rewrite's, named as such.
        and not rewritten_together(ev, j)
    ]
    hit = [j for j in pool if _confined(j)]
    if not hit:
        return None
    j = hit[0]
    last = [s for s in j.trial.sends if s.turn == j.trial.turns]
    lost = set(j.result.lost_update)
    spreads = [float(x.trial.concurrent["spread_ms"]) for x in hit if x.trial.concurrent]
    stored = [s for s in last if s.id not in lost]
    sends = " and ".join(f"{s.text!r} ({s.status}" + (f" in {s.ms:.0f} ms" if s.ms else "") + ")" for s in last)
    kept = (
        f"the stored history holds {stored[0].text!r} whole and lacks rows of the other"
        if stored
        else "the stored history lacks a row of each, while the other tab's row of the same role is there"
    )
    return Diagnosis(
        "lost_update",
        "turns sent at once from two tabs overwrite each other: the history is read, appended to "
        "and written back without WATCH/MULTI or a script (a lost update); the same turns sent "
        "one at a time are all kept",
        f"in {len(hit)}/{len(pool)} trials with both tabs' sends acknowledged and in flight together "
        f"(starts {min(spreads):.1f}-{max(spreads):.1f} ms apart, {(j.trial.concurrent or {}).get('where')} view), "
        f"e.g. trial {j.id}: {sends}; {kept} (trials {few(ids(hit))})",
        len(hit),
        len(pool),
        ids(hit),
    )
