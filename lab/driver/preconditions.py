"""Did a trial's experiment hold? Checked after the trial from the backend's own events; a
trial whose preconditions did not hold is unknown (it exercised nothing), never a pass.

- two_tabs / double_submit: the last turn's two requests were in flight at once at the backend
  (lab.model.concurrency) -- or, in a window sweep of the tabs' gap, began that gap apart;
- a Paced fault (ttl_elapse): the conversation kept its pace (the fault says how);
- mid_stream: the reload cut the last reply's stream (the backend's stream did not complete);
- in_flight: the reload left while the last send was in flight (its answer had not reached the
  page) -- on a busy machine either can come too late, and the trial then tested nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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
        why = concurrency.window_problem(trial.concurrent, plan.tab_gap_ms)
        if why:
            trial.preconditions_met = False
            trial.errors.append(why)
    why_not = window_missed(plan.cell.refresh, plan.cell.turns, trial, events.by_id)
    if why_not:
        trial.preconditions_met = False
        trial.errors.append(why_not)
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


def window_missed(refresh: str, turns: int, trial: Trial, by_id: Mapping[str, list[dict[str, Any]]]) -> str | None:
    """Why a refresh that claims a moment inside the last send did not come then (None: it did,
    or the trial never got that far -- the checker says so by itself)."""
    last = [s for s in trial.sends if s.turn == turns and s.retry_of is None]
    if not last or not trial.refresh_reached:
        return None
    if refresh == "mid_stream":
        closed = [e for e in by_id.get(last[0].id, []) if e.get("event") == "chat.stream_closed"]
        if closed and all(e.get("completed") for e in closed):
            return "mid_stream window missed: the last reply's stream had completed before the reload cut it"
    if refresh == "in_flight" and last[0].status is not None:  # answered: no longer in flight
        return (
            f"in_flight window missed: the last send's answer (HTTP {last[0].status}) reached the page "
            "before the reload left"
        )
    return None
