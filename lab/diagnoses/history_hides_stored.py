"""Acknowledged messages missing from the history the app serves, yet in its Redis key."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, Judged, explained, register
from lab.diagnoses.rewrite_window import rewritten_together


@register(
    "history_hides_stored",
    needs=("key",),
    explains_loss=True,
    after=("session_cookie_path", "history_from_another_key", "rewrite_window", "history_from_copy"),
)
def diagnose(ev: Evidence) -> Diagnosis | None:
    # A cookie scoped away from the history route hides it all too; where its Path says so, the
    # trial is that diagnosis's (the read path may be right: it is never given the session).
    cookie = explained(ev.found, "session_cookie_path", "history_from_another_key")
    # Rows two interleaved rewrites pushed back are the rewrite's shape, not a read path's.
    # Where the run proved the history served from a copy that lags the store, a settled read
    # that lacks only the newest turns is that copy's shape too (a worker's stale cache answered
    # it): it counts for neither (measured: 1 of 35 trials of a per-worker cache, under load).
    copy = any(d.code == "history_from_copy" for d in ev.found)
    hit = [
        (j, j.hidden_stored)
        for j in ev.judged
        if j.hidden_stored
        and j.id not in cookie
        and not rewritten_together(ev, j)
        and not (copy and _newest(j, j.hidden_stored))
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


def _newest(j: Judged, hidden: list[int]) -> bool:
    """The hidden turns are the newest the trial acknowledged (the conversation as it stood
    earlier), not old or scattered ones (a cap, a filter)."""
    acked = sorted({s.turn for s in j.trial.sends if s.outcome == "ok"})
    return bool(hidden) and sorted(hidden) == acked[len(acked) - len(hidden) :]
