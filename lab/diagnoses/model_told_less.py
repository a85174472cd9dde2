"""The model was told less than the user had been acknowledged, while the store held it: the
prompt's history came from a copy that lags the store (a cache, a worker's own memory, a read
that raced a write), not from the key as it stood -- distinct from a storage loss (the store did
not hold the turn: acked_lost and its kin) and from a design that keeps the newest turns (a
context window, a token budget, a fixed number of turns picked by relevance: lab.model.context)."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, Judged, few, ids, register
from lab.model import context
from lab.model.store import CLOCK_GRAIN_S, sends_held_at


@register("model_told_less", needs=("model", "store"))
def diagnose(ev: Evidence) -> Diagnosis | None:
    pool = [j for j in ev.judged if j.trial.model_calls and j.trial.store is not None]
    told = {j.id: context.judge(j.trial) for j in pool}
    every = [x for j in pool for x in told[j.id]]
    if not every or context.fixed_size(every) is not None:
        return None  # a window, or any selection of fixed size: a design (reported beside the results)
    fixed = context.fixed_texts([c for j in pool for c in j.trial.model_calls or []])
    hit: list[tuple[Judged, context.Told, list[int]]] = []
    for j in pool:
        for x in told[j.id]:
            call = (j.trial.model_calls or [])[x.call]
            if not context.lagging(x, every) or context.carries_other(call, j.trial, fixed):
                continue
            send = next(s for s in j.trial.sends if s.id == x.send)
            # Held before the send left: no read the app made for it can have come before the write.
            # By send: two tabs' sends share a turn, and one of them held is not the other (a
            # lost update overwrote it: a storage loss, drawn as such -- an Express app written
            # unseen, 4/16 trials drawn model_told_less before, 2026-12-06).
            held = sends_held_at(j.trial, send.t_invoke - CLOCK_GRAIN_S)
            lacking = [turn for turn, sid in zip(x.missing, x.missing_sends) if held is not None and sid in held]
            if lacking:
                hit.append((j, x, lacking))
                break
    if not hit:
        return None
    j0, x0, lacking0 = hit[0]
    given = [turn for turn in x0.expected if turn not in x0.missing]
    return Diagnosis(
        "model_told_less",
        "the model is told less than the user was acknowledged while Redis held it: the prompt's "
        "history comes from a copy that lags the store (a cache, a worker's own memory, a read "
        "that raced a write) -- the page and the key can look fine while the assistant forgets",
        f"in trial {j0.id} the model call for turn {_turn(j0, x0.send)} carried turns "
        f"{given or 'none'} of {x0.expected}: turn{'s' if len(lacking0) > 1 else ''} "
        f"{', '.join(map(str, lacking0))} had been acknowledged and in Redis before that send left "
        f"(the stand-in's record against MONITOR); in {len(hit)}/{len(pool)} trials with model calls "
        f"({few(ids(j for j, _, _ in hit))})",
        len(hit),
        len(pool),
        [j.id for j, _, _ in hit],
    )


def _turn(j: Judged, send_id: str) -> int:
    return next(s.turn for s in j.trial.sends if s.id == send_id)
