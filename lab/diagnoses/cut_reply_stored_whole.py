"""A reply the model's stream cut short is stored as if it were whole: the app keeps what had
arrived when the stream broke (an exception swallowed, the partial text saved at the stream's
end) in the same record a whole reply gets -- no flag, no status, no note -- and after a refresh
the history shows half an answer as the answer.

Drawn only from the store: a write carries the text the stand-in had sent before it cut the
faulted send's call (its exact start of a reply, which no whole reply of the trial holds as a
record of its own), in a record of the same shape as the app's records of the trial's whole
replies (lab.model.shape: the same fields with the same flags). An app that marks a cut reply
(``interrupted: true``, a status, a note in the text) stores another shape, and one that drops
it stores none: neither counts. Where the trial stored no whole reply the lab can find, it
cannot compare and does not count."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, Judged, few, ids, register
from lab.model import context


def _shapes(j: Judged, outcome: str, under_fault: bool) -> set[str]:
    """The shapes of the app's records of the stand-in's replies answered ``outcome`` for the
    trial's sends under the fault (or not)."""
    calls = j.trial.model_calls or []
    wanted = set()
    for i, c in enumerate(calls):
        s = context.served(j.trial, c)
        if c.get("outcome") == outcome and s is not None and s.under_fault == under_fault and c.get("reply"):
            wanted.add(i)
    return {sh for r in j.trial.store or [] if r.get("conn") != "lab" for i, sh in r.get("shapes", []) if i in wanted}


def _as_whole(j: Judged) -> bool:
    whole = _shapes(j, "whole", False)
    return bool(whole & _shapes(j, "cut", True))


@register("cut_reply_stored_whole", needs=("model", "store"))
def diagnose(ev: Evidence) -> Diagnosis | None:
    pool = [
        j
        for j in ev.judged
        if j.trial.fault == "model_cut" and j.trial.store is not None and _shapes(j, "whole", False)
    ]
    hit = [j for j in pool if _as_whole(j)]
    if not hit:
        return None
    j0 = hit[0]
    turn = next(s.turn for s in j0.trial.sends if s.under_fault)
    cut = next(c for c in j0.trial.model_calls or [] if c.get("outcome") == "cut")
    return Diagnosis(
        "cut_reply_stored_whole",
        "a reply the model's stream cut short is stored as if it were whole (the exception swallowed, "
        "what had arrived saved as the answer): after a refresh the history shows half an answer -- "
        "on a broken stream store nothing, or mark the reply as cut",
        f"in trial {j0.id} the model's stream for turn {turn} stopped after {cut.get('tokens_sent')} tokens "
        f"and the app wrote those {len(str(cut.get('reply', '')).split())} words to Redis in the very record "
        f"shape its whole replies get; in {len(hit)}/{len(pool)} trials with a cut model stream ({few(ids(hit))})",
        len(hit),
        len(pool),
        ids(hit),
    )
