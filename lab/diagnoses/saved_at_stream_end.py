"""A streamed turn stored only when its stream completes: a cut stream loses it."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, Judged, register
from lab.model.store import never_written


def _unwritten(j: Judged) -> set[int] | None:
    """The trial's turns no write of the app ever carried (None: no record, or it cannot say)."""
    return never_written(j.trial) if j.trial.store is not None else None


@register("saved_at_stream_end", needs=("stream_cut",), explains_loss=True)
def diagnose(ev: Evidence) -> Diagnosis | None:
    """A turn cut mid-stream is missing its user message at the end, while the replies of the same
    conversation that streamed to their end were stored. Only the reply missing is not this: an
    app may drop a reply its client left on purpose (lab.model.checker: cut_reply_dropped). Nor
    is a cut turn the store's record shows written and then taken out (cut_turn_removed): the
    two leave the same page, so without the record the cause names both."""
    pool = [j for j in ev.judged if j.cut]
    hit = []
    told = True  # every hit's question shown never written by the record
    for j in pool:
        never = _unwritten(j)
        lost = [t for t in sorted(j.cut) if t in j.lost_user and (never is None or t in never)]
        whole = [s for s in j.trial.sends if s.streamed and not s.cut and s.outcome == "ok"]
        kept = [s for s in whole if s.turn not in j.lost_user and s.turn not in j.reply_missing]
        if lost and kept:
            hit.append((j, lost, kept))
            told = told and never is not None
    if not hit:
        return None
    j0, lost0, kept0 = hit[0]
    cut0 = j0.send(lost0[0])
    what = "the user message" + (" and the reply" if lost0[0] in j0.turns(j0.result.lost["assistant"]) else "")
    return Diagnosis(
        "saved_at_stream_end",
        "a streamed turn is stored only when its stream completes: a refresh or a closed tab mid-reply loses it"
        + (
            " (the store's record: its question never reached Redis)"
            if told
            else " -- or it was stored and the app took it out again when the stream broke (cut_turn_removed): "
            "the store's record, absent or holding no turn's text as text (compressed, encoded), cannot tell the two apart"
        ),
        f"e.g. trial {j0.id}: turn {lost0[0]} acknowledged by its first chunk after "
        f"{(cut0.ms if cut0 and cut0.ms else 0):.0f} ms, cut there, and {what} missing from the settled "
        f"history, while the {len(kept0)} replies streamed to their end (about "
        f"{max(s.ms or 0 for s in kept0):.0f} ms) were stored; in {len(hit)}/{len(pool)} trials with a cut stream",
        len(hit),
        len(pool),
        [j.id for j, *_ in hit],
    )
