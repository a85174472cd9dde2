"""Did a trial's experiment hold? Checked after the trial from the backend's own events; a
trial whose preconditions did not hold is unknown (it exercised nothing), never a pass.

- two_tabs / double_submit: the last turn's two requests were in flight at once at the backend
  (lab.model.concurrency) -- or, in a window sweep of the tabs' gap, began that gap apart;
- a Paced fault (ttl_elapse): the conversation kept its pace (the fault says how).
"""

from __future__ import annotations

from lab.model import concurrency
from lab.faults import Fault
from lab.faults.base import Paced
from lab.model.history import Trial
from lab.plan.schedule import CONCURRENT_POINTS, TrialPlan
from lab.stack.events import BackendEvents


def check(
    plan: TrialPlan,
    fault: Fault,
    trial: Trial,
    events: BackendEvents,
    expired_at_s: float | None,
    read_at_s: float | None,
) -> None:
    """Record on ``trial`` (preconditions_met, errors) what did not hold."""
    if plan.cell.refresh in CONCURRENT_POINTS:
        last = {s.id for s in trial.sends if s.turn == plan.cell.turns}
        trial.concurrent = concurrency.at_backend(e for i in last for e in events.by_id.get(i, []))
        why = (
            concurrency.gap_problem(trial.concurrent, plan.tab_gap_ms)
            if plan.tab_gap_ms
            else concurrency.problem(trial.concurrent)
        )
        if why:
            trial.preconditions_met = False
            trial.errors.append(why)
    if isinstance(fault, Paced) and trial.sends:
        # Write times: right after receipt (the user row) and right before done (the reply).
        times = [
            float(e["t"])
            for s in {x.id for x in trial.sends}
            for e in events.by_id.get(s, [])
            if e.get("event") in ("chat.received", "chat.done")
        ]
        problem = fault.check_pacing(times, expired_at_s, read_at_s)
        if problem:
            trial.preconditions_met = False
            trial.errors.append(f"{fault.name} precondition not met: {problem}")
