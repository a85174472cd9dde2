"""The user's message is stored only once the model has answered: when the model fails (a 429, a
500, an overload) the message the user sent -- and saw on the page -- is never written, and a
refresh shows it gone. Drawn only where the app stores every other turn of the trial (so it is
not a store that loses turns anyway) and the call for that send was answered with the error."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, Judged, few, ids, register
from lab.model import context
from lab.model.history import Send
from lab.model.store import never_written


# The model faults after which the app got no answer for the faulted send (lab.faults).
FAULTS = ("model_error", "model_stall")
HOW = {"error": "answered with the injected error", "held": "held with no answer", "client_gone": "held with no answer"}


def _failed(j: Judged, s: Send) -> dict[str, object] | None:
    """The model call made for this send that the model failed (an error, a stall)."""
    calls = j.trial.model_calls or []
    return next((c for c in calls if c.get("outcome") in context.FAILED and context.served(j.trial, c) is s), None)


def _answered_later(j: Judged) -> bool:
    calls = j.trial.model_calls or []
    return any(c.get("outcome") == "whole" and (s := context.served(j.trial, c)) and s.under_fault for c in calls)


def _gone(j: Judged) -> list[Send]:
    never = never_written(j.trial)
    if never is None:  # no record, or one the lab cannot search: it cannot say what was written
        return []
    if any(s.turn in never for s in j.trial.sends if not s.under_fault and s.outcome == "ok"):
        return []  # the app loses turns without the model failing: another cause
    return [s for s in j.trial.sends if s.under_fault and s.turn in never and _failed(j, s)]


@register("lost_after_model_error", needs=("model", "store"))
def diagnose(ev: Evidence) -> Diagnosis | None:
    # Trials where the error reached the app: no call for the faulted send was answered (an app
    # that retried past a provider that recovered got its answer).
    pool = [
        j
        for j in ev.judged
        if j.trial.fault in FAULTS and j.trial.model_calls and j.trial.store is not None and not _answered_later(j)
    ]
    hit = [(j, gone) for j in pool if (gone := _gone(j))]
    if not hit:
        return None
    j0, gone0 = hit[0]
    s0 = gone0[0]
    how = HOW.get(str((_failed(j0, s0) or {}).get("outcome")), "failed")
    return Diagnosis(
        "lost_after_model_error",
        "the user's message is stored only once the model has answered: when the model fails (a rate "
        "limit, a server error, a stall past the app's timeout) the message the user sent is never "
        "written, and a refresh shows it gone -- store it before calling the model",
        f"in trial {j0.id} the model's call for turn {s0.turn} was {how}, the "
        f"app answered {_answered(s0)}, and no command wrote the message to Redis (MONITOR), while "
        f"every other turn was stored; in {len(hit)}/{len(pool)} trials with a model failure ({few(ids(j for j, _ in hit))})",
        len(hit),
        len(pool),
        [j.id for j, _ in hit],
    )


def _answered(s: Send) -> str:
    """How the app answered the send: its status, and where a 2xx was no answer (a stream that
    ended with the app's error event instead of its end), why not."""
    if s.status is None:
        return s.reason
    return (
        f"{s.status}"
        if s.outcome == "ok" or not s.reason or s.reason == f"HTTP {s.status}"
        else f"{s.status} ({s.reason[:80]})"
    )
