"""Acknowledged messages missing from the history the app serves, yet in its Redis key."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, explained, register
from lab.diagnoses.rewrite_window import rewritten_together


@register("history_hides_stored", needs=("key",), explains_loss=True, after=("session_cookie_path", "rewrite_window"))
def diagnose(ev: Evidence) -> Diagnosis | None:
    # A cookie scoped away from the history route hides it all too; where its Path says so, the
    # trial is that diagnosis's (the read path may be right: it is never given the session).
    cookie = explained(ev.found, "session_cookie_path")
    # Rows two interleaved rewrites pushed back are the rewrite's shape, not a read path's.
    hit = [
        (j, j.hidden_stored)
        for j in ev.judged
        if j.hidden_stored and j.id not in cookie and not rewritten_together(ev, j)
    ]
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
