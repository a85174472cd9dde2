"""A target the lab did not write as the runner's client (lab.runner.client.Client): the black
box. Its trial is the prober's (lab.investigate.run.blackbox) -- the conversation through the
lab's page or the app's own, the refresh, the settled read through the app, the key read from
Redis -- all in ``converse``: a black box has no events of its own to say when it is quiet, so
its "quiescence" is the settled read, taken beside the reload. The runner owns the loop around
it: fault groups and their lockstep, the deadline, the pool of contexts, the checker, on_trial.

Its errors are notes (a stale read not tested, a page that broke the spec's contract once),
not voids; its settled read goes through the faulted link, so its faults are healed before it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playwright.async_api import Browser

from lab.common.phases import Phases
from lab.driver.slots import Slot
from lab.faults import Fault
from lab.investigate.browser.settle import MODEL_END_DEADLINE_S, QUIESCENCE_DEADLINE_S
from lab.investigate.run.blackbox import Prober
from lab.investigate.run.experiments import Experiment
from lab.model.history import Send, Trial
from lab.model.outcome import TrialOutcome
from lab.plan.lockstep import Lockstep
from lab.plan.schedule import Cell, TrialPlan

# The deadline is a backstop for a hung step, not a measure: past every bound of the trial's own
# (each send and its reload up to the spec's timeout, the settled read, the model's calls).
LIMIT_BASE_S = 60.0
LIMIT_PER_TURN_S = 15.0


@dataclass
class ProbePage:
    """A black-box trial as the runner sees it. Where its time goes is marked on the trial
    itself (phase events: lab bench sums them); its page goes back to the pool with its slot."""

    trial: Trial | None = None
    sends: list[Send] = field(default_factory=list)
    timing: Phases = field(default_factory=Phases)
    trace: bool = False

    @property
    def phase(self) -> str:
        """The step the trial last finished (named if it times out)."""
        marks = [e["phase"] for e in (self.trial.events if self.trial else []) if e.get("kind") == "phase"]
        return f"after {marks[-1]}" if marks else "start"

    async def screenshot(self) -> bytes | None:
        return None

    async def close(self, trace_dir: Path | None = None) -> None:
        return None


class BlackBoxClient:
    heals_before_reading = True
    errors_make_unknown = False

    def __init__(self, prober: Prober) -> None:
        self.prober = prober
        self.experiments: dict[Cell, Experiment] = {}  # a trial's experiment, by its plan's cell

    def plan(self, exp: Experiment, trial_id: str, seed: int, replay: str) -> TrialPlan:
        """A trial of ``exp`` as the runner's plan (what the black box is told is the experiment)."""
        cell = exp.cell(self.prober.spec.name)
        self.experiments[cell] = exp
        return TrialPlan(cell, trial_id, seed, (), 0, 0, 0, replay=replay)

    def limit_s(self, plan: TrialPlan) -> float:
        per_turn = LIMIT_PER_TURN_S + 2 * self.prober.spec.chat.timeout_s
        return LIMIT_BASE_S + per_turn * plan.cell.turns + QUIESCENCE_DEADLINE_S + MODEL_END_DEADLINE_S

    @asynccontextmanager
    async def observed(self) -> AsyncIterator[None]:
        """Its observers (the store's record) are the investigation's, open around its contract check."""
        yield

    def driver(self, browser: Browser, plan: TrialPlan, trace: bool) -> ProbePage:
        return ProbePage()

    async def converse(
        self,
        plan: TrialPlan,
        d: ProbePage,
        trial: Trial,
        step: Lockstep | None,
        evidence: str | None,
        slot: Slot,
        release: Callable[[], None],
    ) -> None:
        """The prober's trial; its place goes to the next trial once the page has reloaded (the
        settled read, the model's calls and the key are waits on the app, not load on it)."""
        d.trial, d.sends = trial, trial.sends
        exp = self.experiments[plan.cell]
        await self.prober.trial(exp, plan.trial_id, plan.seed, step, into=trial, slot=slot, reloaded=release)

    async def quiesce(self, d: ProbePage, trial: Trial) -> None:
        """The settled read was the trial's own (converse)."""

    async def final_read(self, d: ProbePage, trial: Trial) -> tuple[str | None, dict[str, Any], float | None]:
        """The key was read in the trial (converse): its record."""
        key = trial.redis_final or {}
        return key.get("key"), key, None

    def preconditions(
        self, plan: TrialPlan, fault: Fault, trial: Trial, sid: str | None, read_at: float | None
    ) -> None:
        """The black box's windows were checked in the trial (unknown where missed)."""

    async def artifacts(
        self, folder: Path, outcome: TrialOutcome, d: ProbePage, dump: dict[str, Any], shot: bytes | None
    ) -> Path:
        raise NotImplementedError("a black-box trial keeps its record in trials.json, not a folder")
