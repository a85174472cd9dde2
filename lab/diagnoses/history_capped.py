"""Loss with no fault, only of the oldest turns, at the same stored length: a capped history."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, Judged, explained, few, ids, register


def _oldest_only(j: Judged) -> bool:
    """The turns missing are the oldest acknowledged ones: the first of the acknowledged turns,
    not of every turn -- a send whose answer the page never saw (its outcome unknown) is neither
    kept nor lost, and does not break the cap's shape (a 12-turn trial of a CI run, 2026-12-05,
    whose turn 9 went unanswered to the page, was called acked_lost)."""
    return j.lost_user == j.acked[: len(j.lost_user)]


@register("history_capped", needs=("no_fault",), explains_loss=True, after=("session_cookie_path",))
def diagnose(ev: Evidence) -> Diagnosis | None:
    cookie = explained(ev.found, "session_cookie_path")  # its trials lose every turn from view
    pool = [j for j in ev.judged if j.trial.fault == "none" and not j.cut and j.id not in cookie]
    hit = [j for j in pool if j.lost_user]
    if not hit:
        return None
    oldest_only = all(_oldest_only(j) for j in hit)
    lengths = {len(j.trial.final_rows or []) for j in hit}
    if not oldest_only or len(lengths) != 1 or len(hit) < 2:
        return None
    cap = lengths.pop()
    if cap == 0:
        # Nothing shown at all is not a cap: the history answers for another conversation, or
        # for none (a session the read never gets), which other diagnoses tell apart.
        return None
    # A cap loses in EVERY fault-free conversation longer than it, not in some of them.
    longer = [j for j in pool if 2 * len(j.acked) > cap]
    if len(longer) != len(hit):
        return None
    shortest = min(j.trial.turns for j in hit)
    intact = [j for j in pool if j not in hit]
    # The same cap under a fault: only the oldest turns missing and exactly `cap` rows stored.
    also = [
        j
        for j in ev.judged
        if j.trial.fault != "none"
        and j.lost_user
        and not j.cut
        and _oldest_only(j)
        and len(j.trial.final_rows or []) == cap
    ]
    return Diagnosis(
        "history_capped",
        f"loss only beyond a conversation length, with no fault at all: the history is capped at {cap} rows",
        f"in {len(hit)}/{len(pool)} fault-free trials of {shortest}+ turns only the oldest turns are "
        f"missing and the stored history has exactly {cap} rows (trials {few(ids(hit))})"
        + (
            f"; the {len(intact)} shorter conversations ({', '.join(sorted({str(j.trial.turns) for j in intact}))} "
            f"turns) kept every turn"
            if intact
            else ""
        )
        + (f"; the same cap explains the loss in {len(also)} trials under a fault ({few(ids(also))})" if also else ""),
        len(hit),
        len(pool),
        ids(hit),
        also=ids(also),
    )
