"""A refusal of one write that a trial cannot place on its send (write_refused at=write, answer
or later: Redis refuses the first write it meets once the fault turn's send has left, then serves
writes again).

The refusal is counted, not named: Redis says how many writes it refused and of which command
(INFO), not whose, and MONITOR never shows a refused command. The lab takes the refused write
for the fault turn's -- true where the app has finished every earlier turn's write before it
sends the next. An app that leaves a turn's write to a promise or task nobody awaits may still
be carrying an earlier turn's write when the fault turn's send leaves, and the one write refused
may be that one. Seen in a fresh-clone CI run (2026-12-07, a floating promise in an Express app):
turn 1 acknowledged, its write not yet in Redis when turn 2's send left; turn 2's rows all
stored, turn 1's never -- the refusal met turn 1's write, and the trial was judged as turn 2's
refusal handled. Such a trial is unknown: it cannot say which send it tested."""

from __future__ import annotations

from collections.abc import Iterable

from lab.model.history import Trial

ONE_WRITE = ("write", "answer", "later")  # the at= values that refuse one write, not a whole send


def misplaced(trial: Trial, lost_turns: Iterable[int]) -> str:
    """Why the trial's one refused write may have been an earlier turn's ("": it was its send's):
    an earlier turn acknowledged, with no write of it in the store's record before the fault
    turn's send left, and lost. A black box with no record (``store_note`` says why: MONITOR
    refused, no key known) cannot say an earlier turn was written first: any such turn lost
    leaves the refusal unplaced. A trial with neither (lab chaos's: its backend's events place
    each write) is not judged so."""
    if trial.fault != "write_refused" or trial.fault_params.get("at", "send") not in ONE_WRITE:
        return ""
    faulted = next((s for s in trial.sends if s.under_fault), None)
    if faulted is None or (trial.store is None and not trial.store_note):
        return ""
    before = {n for c in trial.store or [] if c["write"] and c["t"] < faulted.t_invoke for n in c["user"]}
    lost = set(lost_turns)
    pending = sorted(
        s.turn
        for s in trial.sends
        if s.turn < faulted.turn and s.outcome == "ok" and s.turn not in before and s.turn in lost
    )
    if not pending:
        return ""
    if trial.store is None:
        return (
            f"write_refused: turn {pending[0]}, acknowledged, never stored, and no store record to say "
            f"its write was in Redis before turn {faulted.turn}'s send left ({trial.store_note}) -- the "
            f"one write refused may have been it: the trial cannot say which send it tested"
        )
    return (
        f"write_refused: turn {pending[0]}'s write, acknowledged and not yet in Redis when turn "
        f"{faulted.turn}'s send left, never stored -- the one write refused may have been it: the "
        f"trial cannot say which send it tested"
    )
