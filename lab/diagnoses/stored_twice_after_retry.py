"""The user's message stored twice after the model's call was retried: the app retries the whole
exchange -- store the message, call the model -- instead of the call alone, so one failed call
leaves the message in the history twice.

Drawn only where the stand-in failed the faulted send's first call and the app called the model
again for that message (its record: an error, then another call -- the app retried), the
checker found that turn stored more than once, and no other turn of the trial: an app that
duplicates turns anyway is `duplicates`' evidence, not this one's. A retry inside the SDK
(the `openai` SDK's, the AI SDK's) repeats the call alone, and stores nothing twice."""

from __future__ import annotations

from typing import Any

from lab.diagnoses import Diagnosis, Evidence, Judged, few, ids, register
from lab.model import context


def _calls(j: Judged) -> list[dict[str, Any]]:
    """The model calls that served the faulted send, in the order they started."""
    faulted = [s for s in j.trial.sends if s.under_fault]
    calls = [c for c in j.trial.model_calls or [] if any(context.served(j.trial, c) is s for s in faulted)]
    return sorted(calls, key=lambda c: float(c.get("t_start", 0.0)))


def retried(j: Judged) -> bool:
    """The faulted send's first model call failed and the app called again."""
    outcomes = [c.get("outcome") for c in _calls(j)]
    return len(outcomes) >= 2 and outcomes[0] == "error"


def stored_twice(j: Judged) -> bool:
    """Retried, and the faulted send's turn -- and no other -- stored more than once."""
    return j.trial.fault == "model_error" and retried(j) and j.copies_of_faulted_only


@register("stored_twice_after_retry", needs=("model",))
def diagnose(ev: Evidence) -> Diagnosis | None:
    pool = [j for j in ev.judged if j.trial.fault == "model_error" and retried(j)]
    hit = [j for j in pool if stored_twice(j)]
    if not hit:
        return None
    j0 = hit[0]
    turn = next(s.turn for s in j0.trial.sends if s.under_fault)
    return Diagnosis(
        "stored_twice_after_retry",
        "the user's message is stored again each time the model's call is retried: the app retries "
        "the whole exchange (store the message, call the model) instead of the call alone -- store "
        "the message once, outside the retry",
        f"in trial {j0.id} the model failed the first call for turn {turn} and the app called again "
        f"({len(_calls(j0))} calls for it), and the history holds that message twice while every other turn "
        f"once; in {len(hit)}/{len(pool)} trials whose app retried a failed call ({few(ids(hit))})",
        len(hit),
        len(pool),
        ids(hit),
    )
