"""Acknowledged messages missing from the history the app serves, yet in its Redis key."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, register


@register("history_hides_stored", needs=("key",), explains_loss=True)
def diagnose(ev: Evidence) -> Diagnosis | None:
    hit = []
    for j in ev.judged:
        stored = set((j.trial.redis_final or {}).get("stored_turns", []))
        hidden = [t for t in j.lost_user if t in stored]
        if hidden:
            hit.append((j, hidden))
    if not hit:
        return None
    j0, h0 = hit[0]
    return Diagnosis(
        "history_hides_stored",
        "the history endpoint does not show messages that are stored in Redis: the read path "
        "(a capped or filtered read, a wrong key) hides them",
        f"e.g. trial {j0.id}: turns {h0} absent from GET history but present in "
        f"{(j0.trial.redis_final or {}).get('key')}; in {len(hit)}/{len(ev.judged)} trials",
        len(hit),
        len(ev.judged),
        [j.id for j, _ in hit],
    )
