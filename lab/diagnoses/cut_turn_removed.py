"""A streamed turn the browser left mid-reply is taken out of the store again: its question
reached Redis before the cut, and after the cut the app's own commands removed it (the turn
"unfinished", undone: an LREM, an HDEL, a DEL) -- a refresh mid-reply
loses the question the user had sent.

Told apart from saved_at_stream_end (a turn written only when its stream completes, so never
written when cut) by the store's record alone: there the cut turn's question never reached
Redis; here it did, then a command of the app's that takes rows out came after the cut, and the
settled history lacks it. Without the record the two leave the same evidence, and
saved_at_stream_end names both."""

from __future__ import annotations

from collections import Counter

from lab.diagnoses import Diagnosis, Evidence, Judged, few, ids, register
from lab.model.store import REMOVES, first_writes

# Commands that take rows out and write nothing back. A whole-value write (SET of the conversation
# without the turn) is left out: a stale copy written back leaves the same record, and it is
# another cause's (rewrite_window, history_from_copy).
TAKE_ROWS_OUT = (
    *REMOVES,
    "LREM",
    "LPOP",
    "RPOP",
    "HDEL",
    "ZREM",
    "ZREMRANGEBYSCORE",
    "ZREMRANGEBYRANK",
    "SREM",
    "XDEL",
)


def removed(j: Judged) -> list[tuple[int, float, float, list[str]]]:
    """(turn, its question's first write, the cut, the app's commands taking rows out after the
    cut) for the trial's cut turns whose question is missing at the end though a write of the
    app carried it before the cut, while a reply the same conversation streamed whole is still
    there (not a key lost whole); [] without the store's record."""
    whole = [s for s in j.trial.sends if s.streamed and not s.cut and s.outcome == "ok"]
    if j.trial.store is None or not [s for s in whole if s.turn not in j.lost_user]:
        return []
    written = first_writes(j.trial)
    out = []
    for turn in sorted(j.cut & set(j.lost_user)):
        s = j.send(turn)
        cut_at = (s.t_complete or s.t_invoke) if s else None
        if turn not in written or cut_at is None or written[turn][0] > cut_at:
            continue
        after = [
            r["cmd"] for r in j.trial.store if r["conn"] != "lab" and r["cmd"] in TAKE_ROWS_OUT and r["t"] >= cut_at
        ]
        if after:
            out.append((turn, written[turn][0], cut_at, after))
    return out


@register("cut_turn_removed", needs=("stream_cut", "store"), explains_loss=True)
def diagnose(ev: Evidence) -> Diagnosis | None:
    pool = [j for j in ev.judged if j.cut and j.trial.store is not None]
    hit = [(j, got) for j in pool if (got := removed(j))]
    if not hit:
        return None
    j0, ((turn, wrote, cut_at, cmds), *_) = hit[0]
    what = ", ".join(f"{c} x{n}" if n > 1 else c for c, n in Counter(cmds).items())
    return Diagnosis(
        "cut_turn_removed",
        "a turn whose reply the browser left is taken out of the store again: its question was "
        "written, and the app removes the unfinished turn when the stream breaks (a cleanup or "
        "rollback on disconnect) -- a refresh mid-reply loses what the user sent; keep the "
        "question, and store the reply whole or marked as cut",
        f"in trial {j0.id} turn {turn}'s question reached Redis {(cut_at - wrote) * 1000:.0f} ms before "
        f"its answer's first chunk; the browser left that stream, then the app sent {what} on the key "
        f"and the settled history lacks the question; in {len(hit)}/{len(pool)} trials with a cut stream ({few(ids(j for j, _ in hit))})",
        len(hit),
        len(pool),
        [j.id for j, _ in hit],
    )
