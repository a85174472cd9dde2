"""Acknowledged messages lost in trials no more specific diagnosis explains."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, Judged, explained, ids, register
from lab.model.history import Trial


@register("acked_lost", last=True)
def diagnose(ev: Evidence) -> Diagnosis | None:
    claimed = explained(ev.found)
    # A turn the app's Redis key holds after the trial is not lost, whatever the history served:
    # a read path that hides it is history_hides_stored's, and beside a copy that lags the store
    # (a per-worker cache answering the settled read too: 1 of 35 trials, CI 2026-12-03) it
    # counts for neither.
    hit = [j for j in ev.judged if j.id not in claimed and _gone(j)]
    if not hit:
        return None
    # What the record says, not a cause: the answers did not wait for a write that reached the
    # key -- one never made, failed before Redis (a cancelled context, a dropped task, a swallowed
    # error) or sent to another key: which of them, no evidence here tells.
    unwritten = [j for j in hit if key_unwritten(j.trial)]
    key = (unwritten[0].trial.redis_final or {}).get("key") if unwritten else None
    named = f" ({key!r})" if key else ""
    return Diagnosis(
        "acked_lost",
        "acknowledged messages lost (no more specific cause identified)",
        f"in {len(hit)}/{len(ev.judged)} trials, e.g. trial {hit[0].id} ({hit[0].trial.fault} / "
        f"{hit[0].trial.refresh}) turns {_gone(hit[0])}"
        + (
            f"; in {len(unwritten)} of them the store's record (MONITOR) holds no write of the app to "
            f"the conversation's key{named}: the answers did not wait for a write that reached it"
            if unwritten
            else ""
        ),
        len(hit),
        len(ev.judged),
        ids(hit),
    )


def key_unwritten(t: Trial) -> bool:
    """The store's record followed the conversation's key through the trial and holds no write
    of the app to it -- a fact about that key, whatever the app's format."""
    return t.store is not None and not any(r["write"] and r["conn"] != "lab" for r in t.store)


def _gone(j: Judged) -> list[int]:
    """The lost turns the key does not hold either (all of them where the key was not read)."""
    return [t for t in j.lost_user if t not in j.hidden_stored]
