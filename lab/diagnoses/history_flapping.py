"""Successive history reads disagree with nothing being written."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, ids, register


@register("history_flapping")
def diagnose(ev: Evidence) -> Diagnosis | None:
    pool = [t for t in ev.trials if t.sends]
    hit = [t for t in pool if t.flapping]
    if not hit:
        return None
    f = hit[0].flapping or {}
    return Diagnosis(
        "history_flapping",
        "successive history reads disagree with nothing being written: replies mixed up on a "
        "connection shared between event loops or threads, or reads spread over copies that differ",
        f"e.g. trial {hit[0].trial_id}: after the last send, {f.get('reads')} 2xx reads switched contents "
        f"{f.get('changes')} times, {f.get('returns')} times back to contents read before (row counts "
        f"seen: {f.get('rows')}); in {len(hit)}/{len(pool)} trials (those trials are unknown for loss: "
        f"there is no settled history to judge)",
        len(hit),
        len(pool),
        ids(hit),
    )
