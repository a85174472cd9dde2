"""The model's side of a run, over its trials: how many calls the context oracle checked, a
fixed context window or selection where every call fits one (a design fact of the app, reported
as such), and what the stand-in added to the trials' wall time. `lab investigate` and
`lab chaos --model` print it and keep it in results.json ("model")."""

from __future__ import annotations

from typing import Any

from lab import diagnoses as dg
from lab.model.outcome import TrialOutcome


def model_side(done: list[TrialOutcome]) -> dict[str, Any]:
    """What the stand-in model was told, over the judged trials: how many calls the context
    oracle checked, and a fixed context window where every call fits one (a design fact of the
    app, reported as such -- never a defect)."""
    from lab.model import context

    judged = [o.trial for o in done if o.result.validity != "unknown" and o.trial.model_calls is not None]
    per_trial = [context.judge(t) for t in judged]  # judged once each: the count and the trials below
    told = [x for calls in per_trial for x in calls]
    n = context.window(told)
    k = context.fixed_size(told) if n is None else None  # a window is the newest-first kind of it
    what = ""
    if judged:
        what = f"{len(told)} model calls checked against the turns acknowledged before each"
        if n is not None:
            what += (
                f"; a context window: every call carried the newest {n} turn{'s' if n != 1 else ''} "
                "and left out the older ones -- a design of the app, not lost history"
            )
        elif k is not None:
            what += (
                f"; a selection of fixed size: every call told less carried {k} of the turns it should "
                "have had, and none carried more -- a design of the app (the first turns, the most "
                "relevant), not lost history"
            )
        elif not any(x.missing for x in told):
            what += f"; none was told less than the user had been acknowledged: {dg.rate_words(0, len(judged))}"
        else:
            short = sum(1 for calls in per_trial if any(x.missing for x in calls))
            what += (
                f"; {sum(1 for x in told if x.missing)} told less than the user had been acknowledged, "
                f"in {dg.rate_words(short, len(judged))}"
            )
    cost = standin_cost(done)
    if cost["calls"] and any(o.seconds for o in done):  # a user's test's records have no wall time
        what += (
            f". The stand-in's answers: {cost['call_ms_mean']:.0f} ms a call on average, "
            f"{cost['share']:.1%} of the trials' wall time"
            + (
                f" (besides the model latency the plan set: {cost['planned_ms_mean']:.0f} ms a call)"
                if cost["planned_ms_mean"]
                else ""
            )
        )
    return {
        "calls": len(told),
        "trials": len(judged),
        "context_window": n,
        "fixed_selection": k,
        "what": what,
        "standin": cost,
    }


def standin_cost(done: list[TrialOutcome]) -> dict[str, Any]:
    """What the stand-in adds to a trial: the time its answered calls took (start to end, as it
    recorded them; the app waits on them in its request) less the waits the lab's plan asked of
    it (a time to first token, a token pace: what the in-process fake or a real provider would
    take too), against the trials' wall time."""
    own, planned = [], []
    for o in done:
        for c in o.trial.model_calls or []:
            if not (c.get("t_end") and c.get("t_start") and c.get("outcome") == "whole"):
                continue
            b = c.get("behaviour") or {}
            wait_s = (int(b.get("ttft_ms") or 0) + int(b.get("token_ms") or 0) * int(c.get("tokens_sent") or 0)) / 1000
            wait_s = wait_s if c.get("stream") else int(b.get("ttft_ms") or 0) / 1000
            planned.append(wait_s)
            own.append(max(0.0, float(c["t_end"]) - float(c["t_start"]) - wait_s))
    wall = sum(o.seconds for o in done if o.trial.model_calls)
    return {
        "calls": len(own),
        "call_ms_mean": 1000 * sum(own) / len(own) if own else 0.0,
        "planned_ms_mean": 1000 * sum(planned) / len(planned) if planned else 0.0,
        "share": sum(own) / wall if wall > 0 else 0.0,
    }
