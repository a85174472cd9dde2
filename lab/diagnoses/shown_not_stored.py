"""The settled history shows an acknowledged turn that Redis never received: the store's record
holds no write carrying it (to its key or any other) and the key does not hold it. The history
is served from somewhere else -- the app's memory (a fallback while Redis failed, a cache that
outlived a failed write) -- which a restart of the app, or another worker, does not have."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, few, ids, register
from lab.model.store import never_written


@register("shown_not_stored", needs=("store", "key"), explains_loss=True)
def diagnose(ev: Evidence) -> Diagnosis | None:
    pool, hit = [], []
    for j in ev.judged:
        unwritten = never_written(j.trial)
        if unwritten is None:
            continue
        pool.append(j)
        shown = [n for n in j.acked if n in unwritten and n not in j.lost_user]
        if shown:
            hit.append((j, shown))
    if not hit:
        return None
    j0, turns0 = hit[0]
    faulted = [j for j, turns in hit if any((s := j.send(n)) is not None and s.under_fault for n in turns)]
    return Diagnosis(
        "shown_not_stored",
        "acknowledged and shown, yet never stored: the history serves turns Redis never received -- "
        "kept in the app's memory (a fallback while Redis failed, a cache that outlived a failed "
        "write); a restart of the app or another worker does not have them",
        f"trial {j0.id} turns {turns0}: answered 200 and in the settled history, with no write carrying "
        f"them in the store's record (MONITOR) and not in the key {(j0.trial.redis_final or {}).get('key')!r}; "
        f"in {len(hit)}/{len(pool)} trials whose record shows the app's writes"
        + (f", {len(faulted)} of them sent while Redis was faulted ({few(ids(faulted))})" if faulted else ""),
        len(hit),
        len(pool),
        [j.id for j, _ in hit],
    )
