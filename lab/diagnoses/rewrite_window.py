"""The store's record shows acknowledged rows deleted and written back one command at a time:
the conversation is rewritten whole, not atomically -- a read in between shows a partial
history, a crash in between loses the turns."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, Judged, register
from lab.model.store import comparable, interleaved_rewrites, rewrite_gaps


def rewritten_together(ev: Evidence, j: Judged) -> bool:
    """A trial whose rows two interleaved rewrites pushed back (duplicated, reordered, dropped):
    this diagnosis's, where it was drawn (diagnoses of those shapes run after it and leave it)."""
    return any(d.code == "rewrite_window" for d in ev.found) and interleaved_rewrites(j.trial)


@register("rewrite_window", needs=("store",), explains_loss=True)
def diagnose(ev: Evidence) -> Diagnosis | None:
    pool = [j for j in ev.judged if j.trial.store is not None and comparable(j.trial)]
    hit = [(j, gaps) for j in pool if (gaps := rewrite_gaps(j.trial))]
    if not hit:
        return None
    j0, gaps0 = hit[0]
    turn0 = max(gaps0, key=lambda n: gaps0[n])
    worst = max(ms for _, gaps in hit for ms in gaps.values())
    together = [j for j, _ in hit if interleaved_rewrites(j.trial)]
    return Diagnosis(
        "rewrite_window",
        "a non-atomic rewrite: each write deletes the stored conversation and pushes it back one "
        "command at a time (no MULTI, no script) -- between the two, acknowledged turns are missing "
        "from Redis: a refresh then shows a partial history, a crash or a failed write loses them",
        f"in trial {j0.id} turn {turn0}, acknowledged, was deleted with the key and written back "
        f"{gaps0[turn0]:.0f} ms later (the store's record: DEL outside a MULTI, then one RPUSH per row); "
        f"in {len(hit)}/{len(pool)} trials whose record holds the app's writes, gaps up to {worst:.0f} ms"
        + (
            f"; in {len(together)} of them two rewrites interleaved (two tabs), pushing rows back twice, "
            "out of order or not at all"
            if together
            else ""
        ),
        len(hit),
        len(pool),
        [j.id for j, _ in hit],
    )
