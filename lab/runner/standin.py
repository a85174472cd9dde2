"""A trial's side of the stand-in model, when the built-in service takes its replies from it
(`lab chaos --model`): the model's time to first token the plan sets, played by the stand-in
for the trial's calls; and after quiescence the stand-in's record of those calls, which the
checker judges against what the user had been acknowledged (lab.model.context)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from lab.model import context
from lab.model.history import Trial
from lab.plan.schedule import TrialPlan, trial_tag
from lab.stack.model_link import ModelLink, wait_ended

MODEL_END_DEADLINE_S = 15.0  # the backend's calls end before its requests do: this is slack
FAKE = ("X-Lab-Model", "fake")  # a trial's requests that say so are answered by the in-process fake


def serving(model: ModelLink | None, plan: TrialPlan) -> ModelLink | None:
    """The stand-in that serves this trial's calls: none where its requests ask the service's
    in-process fake (`lab bench` runs both kinds side by side on one service)."""
    return None if plan.headers.get(FAKE[0]) == FAKE[1] else model


@asynccontextmanager
async def paced(model: ModelLink | None, plan: TrialPlan) -> AsyncIterator[None]:
    """The plan's model latency as the stand-in's time to first token for this trial's calls
    (the in-process fake waits it itself); nothing without a stand-in."""
    if model is None or not plan.llm_latency_ms:
        yield
        return
    match = trial_tag(plan.trial_id)
    await asyncio.to_thread(model.plan, match, ttft_ms=plan.llm_latency_ms)
    try:
        yield
    finally:
        try:
            await asyncio.wait_for(asyncio.to_thread(model.unplan, match), 10)
        except (OSError, TimeoutError):
            pass  # the stand-in is gone or stuck: its plans go with it


async def read_calls(model: ModelLink | None, trial: Trial) -> None:
    """The stand-in's record of the trial's calls, once each has ended. An acknowledged send no
    call served makes the trial unknown: what the model was told is not known for it."""
    if model is None:
        return
    texts, since = [s.text for s in trial.sends], context.calls_since(trial)
    try:
        # One read when every call has ended (the backend's requests have: quiescence), and its
        # finished calls are the record: the built-in service makes no call after its request.
        tag = trial_tag(trial.trial_id)
        still, trial.model_calls = await wait_ended(model, texts, since, MODEL_END_DEADLINE_S, tag)
        if still:
            trial.errors.append(f"{still} model call(s) of this trial had not ended {MODEL_END_DEADLINE_S:g} s on")
    except (OSError, ValueError) as exc:  # the stand-in gone, or an answer that is not JSON
        trial.errors.append(f"the stand-in model's record could not be read: {exc}")
        return
    missing = context.unserved(trial)
    if missing:
        trial.errors.append(
            f"the stand-in model saw no call for acknowledged turn {missing[0].turn}: the backend's "
            "replies did not come from it (is CHAT_MODEL_URL set?)"
        )
