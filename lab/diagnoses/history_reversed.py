"""The history served in a fixed reversed order: every conversation exactly mirrored, in every
trial, whatever the fault -- a read path (or a spec's `order`), not a race."""

from __future__ import annotations

from lab.model.checker import precedes
from lab.diagnoses import Diagnosis, Evidence, Judged, few, ids, register
from lab.model.history import Row, Trial
from lab.model.placement import _messages, place
from lab.model.store import list_side

MIN_PAIRS = 3  # ordered pairs of rows a conversation needs to be called mirrored (2 turns: 6)
# What the store's record adds: the order the app's list lies in, from its write commands --
# against the order the history is read in (the spec's [history] order), which of the two turned.
SIDES = {
    "head": "; the store's record: every row was LPUSHed, so the list lies newest first",
    "tail": "; the store's record: every row was RPUSHed, so the list lies oldest first",
}


def order_pairs(trial: Trial, rows: list[Row]) -> tuple[int, int]:
    """(pairs stored in the order they were made, pairs stored reversed) among the pairs of
    rows whose order is known: a question and its reply, and any two rows of messages one of
    which was answered before the other was sent (turns in flight together have no order)."""
    msgs = _messages(trial.sends)
    placed, _ = place(rows, trial.sends)
    # A text two messages share (two tabs answered "Sure!", a reply that counts turns read the
    # same count) places its rows by a guess: which copy is whose is unknown, so they say nothing
    # about order. Without this, a guess against the order made vetoed a whole reversal.
    texts = [m.text for m in msgs]
    replies = [m.reply for m in msgs if m.reply is not None]
    shared = {"user": {x for x in texts if texts.count(x) > 1}, "reply": {x for x in replies if replies.count(x) > 1}}
    # (message, position) of each stored row in the order made: a question before its reply,
    # a duplicate by its first copy.
    at = [
        (i, min(pos))
        for i, m in enumerate(msgs)
        for pos, text, role in ((placed[m.id].user, m.text, "user"), (placed[m.id].reply, m.reply, "reply"))
        if pos and text not in shared[role]
    ]
    fwd = rev = 0
    for x in range(len(at)):
        for y in range(x + 1, len(at)):
            (mi, pi), (mj, pj) = at[x], at[y]
            # The same message's question and reply, or one answered before the other was sent.
            if mi == mj or precedes(msgs[mi], msgs[mj]):
                fwd += pi < pj
                rev += pi > pj
    return fwd, rev


def mirrored(trial: Trial, rows: list[Row] | None) -> bool:
    if rows is None:
        return False
    fwd, rev = order_pairs(trial, rows)
    return fwd == 0 and rev >= MIN_PAIRS


@register("history_reversed")
def diagnose(ev: Evidence) -> Diagnosis | None:
    """Drawn only when every conversation with enough ordered rows is an exact mirror, in at
    least two trials: a race reverses some pairs in some trials, a fixed reversal all of them in
    all. One mirrored conversation beside an ordered one is a race's (writes_out_of_order)."""
    counted = {j.id: order_pairs(j.trial, j.trial.final_rows or []) for j in ev.judged}
    pool = [j for j in ev.judged if sum(counted[j.id]) >= MIN_PAIRS]
    hit = [j for j in pool if counted[j.id][0] == 0]
    if len(hit) < 2 or len(hit) != len(pool):
        return None
    faults = sorted({j.trial.fault for j in hit})
    page = [j for j in hit if mirrored(j.trial, j.trial.page_after_refresh)]
    return Diagnosis(
        "history_reversed",
        "the history is served in a fixed reversed order -- newest first where oldest first is expected "
        "(or the other way round) -- at every turn of every conversation, whatever the fault: nothing "
        "races, the read path is wrong. Check the spec's [history] order first (a correct app read with "
        "the wrong order looks exactly like this); if it is right, the app serves its stored list "
        "without reversing it (e.g. LPUSH, then LRANGE 0 -1 served as oldest first)",
        f"{len(hit)}/{len(pool)} conversations stored exactly mirrored ({_shape(hit[0])}), under "
        f"{', '.join(faults)}"
        + (f"; the page after the refresh showed it upside down too in {len(page)}" if page else "")
        + f" (trials {few(ids(hit))})"
        + SIDES.get(list_side([j.trial for j in hit]) or "", ""),
        len(hit),
        len(pool),
        ids(hit),
    )


def _shape(j: Judged) -> str:
    turns = sorted({s.turn for s in j.trial.sends})
    return f"e.g. trial {j.id}: turns {turns[-1]}..{turns[0]}, each reply above its question"
