"""One trial's conversation in the browser: its turns (a user's think time, the last turn's send
pattern), a one-send fault armed around its turn, the user's retry of a message marked "not
saved", the refresh, and what the page shows after it -- all recorded on the Trial."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from lab.driver.driver import ChatDriver, TriggerMissed, WindowMissed
from lab.model.checker import NETWORK_CHANGED
from lab.model.history import Trial
from lab.plan.lockstep import Lockstep
from lab.plan.schedule import TrialPlan
from lab.driver.slots import Slot


async def run(
    plan: TrialPlan,
    d: ChatDriver,
    trial: Trial,
    step: "Lockstep | None",
    evidence: str | None,
    slot: Slot,
    toxics: Callable[[], dict[str, Any]],
) -> None:
    """The conversation, the refresh, and what the page shows after it."""
    if evidence:
        trial.events.append({"t": time.time(), "kind": "fault", "evidence": evidence, "toxics": toxics()})
    broken = False  # after a driver error the trial still keeps step with its group
    try:
        await d.open(slot=slot)
    except Exception as exc:
        broken = True
        trial.errors.append(f"driver: {type(exc).__name__}: {exc}")
    for turn, text in enumerate(plan.messages, 1):
        armed_here = step is not None and turn == plan.fault_turn
        if armed_here:
            assert step is not None
            with d.timing("lockstep"):
                ok = await step.arm(plan.fault_onset_ms / 1000)
            if not ok:
                trial.fault_confirmed = False
                trial.errors.append(f"fault not confirmed: {step.error}")
            elif not plan.fault_onset_ms:
                _fault_on(trial, turn, step)
        try:
            if not broken and trial.fault_confirmed:
                await _turn(d, plan, trial, turn, text)
        except Exception as exc:  # a driver failure makes the trial unknown, never a pass
            broken = True
            trial.errors.append(f"driver: {type(exc).__name__}: {exc}")
            trial.refresh_reached = False
        if armed_here and plan.fault_onset_ms and trial.fault_confirmed:
            assert step is not None
            if await step.onset():  # a late fault (lab window): on and confirmed during the turn
                _fault_on(trial, turn, step, onset_ms=plan.fault_onset_ms)
            else:
                trial.fault_confirmed = False
                trial.errors.append(f"fault not confirmed: {step.error}")
        if armed_here:
            assert step is not None
            with d.timing("lockstep"):
                await step.heal()
            trial.events.append({"t": time.time(), "kind": "heal", "turn": turn})
        if turn == len(plan.messages):
            continue
        if not broken:
            broken = await _user_retry(d, plan, trial)
    if not broken and trial.refresh_reached and trial.fault_confirmed:
        await _page_after_refresh(d, trial)
    trial.sends = d.sends
    trial.events.extend(d.log)


def _fault_on(trial: Trial, turn: int, step: Lockstep, **extra: Any) -> None:
    trial.events.append(
        {"t": time.time(), "kind": "fault", "turn": turn, "evidence": step.evidence, "toxics": step.toxics, **extra}
    )


async def _user_retry(d: ChatDriver, plan: TrialPlan, trial: Trial) -> bool:
    """A user's retry of a message the page marked "not saved", once the fault is healed (the
    page's retry button: the same message id). True: the driver broke."""
    last = d.sends[-1] if d.sends else None
    cell = plan.cell
    if (
        last is None
        or last.outcome != "info"
        or not (last.status is not None or cell.retry_cut)
        or not cell.user_retry
        or last.retry_of is not None
    ):
        return False
    try:
        again = await d.retry(last)
        if again is not None:
            await d.settled(again)
    except Exception as exc:
        trial.errors.append(f"driver (retry): {type(exc).__name__}: {exc}")
        return True
    return False


async def _page_after_refresh(d: ChatDriver, trial: Trial) -> None:
    try:
        trial.page_after_refresh = await d.read_page()
        if d.history_state == "failed":
            # The page said it could not load the history: an error shown, not a
            # conversation forgotten (the checker's history_failed, not amnesia).
            trial.page_error = "the page's history read failed"
            if any(NETWORK_CHANGED in f for f in d.other_failures):
                trial.page_error += f" ({NETWORK_CHANGED})"
    except Exception as exc:
        trial.errors.append(f"driver (read page): {type(exc).__name__}: {exc}")


async def _turn(d: ChatDriver, plan: TrialPlan, trial: Trial, turn: int, text: str) -> None:
    if turn > 1 and plan.think_ms:
        # The user's think time is part of the schedule (ttl_elapse paces the conversation
        # past 2 x TTL with it); it is the behaviour being run, not a wait for a condition.
        with d.timing("think"):
            await asyncio.sleep(plan.think_ms / 1000)
    if turn == len(plan.messages) and plan.last_turn_headers:  # e.g. the slow last stream of mid_stream
        await d.set_headers({**plan.headers, **plan.last_turn_headers})
    if turn == len(plan.messages) and plan.cell.refresh == "two_tabs":
        s = (await d.send_two_tabs(text, plan.other_tab, turn, gap_ms=plan.tab_gap_ms or 0))[0]
    elif turn == len(plan.messages) and plan.cell.refresh == "double_submit":
        s = (await d.double_submit(text, turn))[0]
    else:
        s = await d.send(text, turn)
    if turn < len(plan.messages):
        await d.answered(s)  # the next send waits, on the page, for this turn to settle
        return
    if plan.cell.refresh == "browser_restart":
        await d.settled(s)
        d.session_id = await d.cookie_session_id() or d.session_id
    try:
        await d.refresh(plan.cell.refresh, s, plan.refresh_delay_ms, plan.refresh_at_age_ms)
    except TriggerMissed as exc:
        trial.refresh_reached = False
        trial.errors.append(str(exc))
        if isinstance(exc, WindowMissed):
            trial.preconditions_met = False  # the machine's timing: an experiment that did not hold
