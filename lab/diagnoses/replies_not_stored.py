"""The bot's replies never stored while the user messages are."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, Judged, explained, few, ids, register
from lab.diagnoses.rewrite_window import rewritten_together


def _missing(j: Judged) -> list[int]:
    return [t for t in j.reply_missing if t not in j.cut]


@register("replies_not_stored", after=("rewrite_window", "acked_write_refused"))
def diagnose(ev: Evidence) -> Diagnosis | None:
    # Replies two overlapping rewrites failed to push back are the rewrite's (rewrite_window); a
    # reply whose write Redis refused, acknowledged all the same, is acked_write_refused's.
    refused = explained(ev.found, "acked_write_refused")
    hit = [
        j
        for j in ev.judged
        if _missing(j) and not set(j.lost_user) - j.cut and not rewritten_together(ev, j) and j.id not in refused
    ]
    if not hit:
        return None
    missing = sum(len(_missing(j)) for j in hit)
    acked = sum(len(set(j.acked) - j.cut) for j in hit)
    return Diagnosis(
        "replies_not_stored",
        "the bot's replies are never stored while the user messages are: the reply's write is not "
        "awaited (scheduled and dropped, e.g. an un-awaited create_task) or fails silently",
        f"{missing} of {acked} acknowledged replies missing from the healed, settled history while "
        f"their user messages are there (trials {few(ids(hit))})",
        len(hit),
        len(ev.judged),
        ids(hit),
    )
