"""Runs trials on the real stack: conversations in Chromium under faults, then the final reads
and the checker. Trials of one cell run concurrently inside one fault window (faults act on a
whole proxy); faults armed around one send run their trials one at a time.

The one runner of the lab's trials: `lab chaos` (and replay, soak, window, lessons) through
``run``, its cells grouped by fault; `lab investigate` (and its window) through ``group``,
one group of its experiments at a time, inside a browser and pool of its own (``attached``),
with its black-box client (lab.investigate.run.client)."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from playwright.async_api import Browser

from lab.model.checker import check_safe
from lab.driver.builtin import BuiltinClient
from lab.driver.slots import Slot
from lab.runner import groups
from lab.common.errors import LabError
from lab.common.wait import bounded
from lab.plan.lockstep import Lockstep
from lab.faults import Fault, Targets
from lab.model.history import Trial
from lab.model.outcome import CellOutcome, TrialOutcome
from lab.runner import run_context, standin
from lab.runner.client import Client, TrialPage
from lab.runner.run_context import RunContext
from lab.plan.schedule import Cell, TrialPlan, tagged
from lab.common.signals import run_async
from lab.stack import Stack
from lab.stack.model_link import ModelLink
from lab.stack.native_faults import serve_writes

# Failing trials per cell that also keep a Playwright trace and a screenshot: a trace zip and a
# screenshot cost the browser more than the rest of a failing trial's artifacts together, and
# the 60th identical failure of a cell adds nothing its first ones and its replay do not show.
TRACED_PER_CELL = 3

# A group's work: its next trial and the cell it counts for (None: none now). Asked again
# whenever a trial ends, so a source may hand out more once some are in (an investigation
# replaces its unknown trials); a trial's outcome is in its cell's trials before it counts as
# ended.
Take = Callable[[], "tuple[TrialPlan, CellOutcome] | None"]


class Runner:
    def __init__(
        self,
        stack: Stack,
        out_dir: Path,
        *,
        concurrency: int = 4,
        on_trial: Callable[[Cell, TrialOutcome], None] | None = None,
        keep_artifacts: bool = True,
        trace: bool = True,
        traced_per_cell: int = TRACED_PER_CELL,
        model: ModelLink | None = None,
        client: Client[Any] | None = None,
        targets: Targets | None = None,
    ) -> None:
        self.stack, self.out_dir, self.concurrency = stack, out_dir, max(1, concurrency)
        self.targets = targets or Targets.of(stack)  # ``targets``: the link a caller already faults
        self.on_trial = on_trial or (lambda c, t: None)
        self.keep_artifacts = keep_artifacts
        self.traced_per_cell = traced_per_cell
        self._traced: dict[str, int] = {}  # cell id -> failing trials traced so far
        self.trace = trace  # Playwright traces (kept for failing trials): off saves browser CPU
        self.finished: list[CellOutcome] = []  # what a Ctrl-C leaves to report
        self._ctx: RunContext | None = None
        # The stand-in model the backend takes its replies from (lab chaos --model): each trial's
        # messages carry its id, its calls are read after quiescence and judged by the checker.
        self.model = model
        # The system under test as the trials drive it (lab.runner.client): by default the
        # built-in service, seen white-box.
        self.client: Client[Any] = client or BuiltinClient(stack, self._toxics)

    def run(self, cells: list[tuple[Cell, list[TrialPlan]]]) -> list[CellOutcome]:
        # A SIGINT/SIGTERM/SIGHUP cancels the run's main task (every finally runs: browser
        # closed, faults healed), then raises lab.common.signals.Interrupt; self.finished keeps what
        # had finished for the partial report.
        return run_async(self._run(cells))

    async def _run(self, cells: list[tuple[Cell, list[TrialPlan]]]) -> list[CellOutcome]:
        self.targets.toxiproxy.reset()
        if self.stack.mode != "external":  # the lab's own Redis: never refusing writes a killed run left it to
            serve_writes(self.stack.cfg.redis_url)
        outcomes: list[CellOutcome] = []
        self.finished = outcomes  # filled as trials finish: what a Ctrl-C leaves to report
        try:
            async with (
                self.client.observed(),
                run_context.opened(self.stack, self.concurrency, self.trace, self.out_dir) as ctx,
            ):
                self._ctx = ctx
                # Cells under the same fault share one fault window, so their trials fill every
                # browser context (a cell of 5 trials alone would leave most of them idle in its
                # last wave).
                # (A window's fault onset is part of the fault: one group arms at one onset.)
                groups: dict[tuple[str, tuple[tuple[str, Any], ...], int], list[int]] = {}
                for i, (cell, _) in enumerate(cells):
                    outcomes.append(CellOutcome(cell))
                    onset = dict(cell.knobs).get("fault_onset_ms", 0)
                    groups.setdefault((cell.fault, cell.fault_params, onset), []).append(i)
                for members in groups.values():
                    work = iter([(p, outcomes[i]) for i in members for p in cells[i][1]])
                    fault = cells[members[0]][0].make_fault()
                    await self.group(fault, functools.partial(next, work, None), [outcomes[i] for i in members])
        finally:
            self._ctx = None
            self._heal_everything()
        return outcomes

    @contextmanager
    def attached(self, ctx: RunContext) -> Iterator[None]:
        """Trials run in a browser and pool the caller opened (and closes, with whatever the
        client observes): `lab investigate` opens them before its contract check."""
        self._ctx = ctx
        try:
            yield
        finally:
            self._ctx = None

    @property
    def ctx(self) -> RunContext:
        """The run in progress (lab.runner.run_context): only inside ``run`` or ``attached``."""
        if self._ctx is None:
            raise RuntimeError("the runner is not running")
        return self._ctx

    def _heal_everything(self) -> None:
        """After success, failure or Ctrl-C: no toxic, every proxy enabled, Redis running (not
        paused, on its network)."""
        try:
            self.targets.toxiproxy.reset()
        except LabError:
            pass
        try:
            self.stack.heal()
        except Exception:  # best effort on the way out: the run's own error is the one to report
            pass

    async def group(self, fault: Fault, take: Take, cells: list[CellOutcome], width: int | None = None) -> None:
        """Trials under one fault (built once for them), ``width`` at a time (default: the
        runner's concurrency), as ``take`` hands them out, through the one loop of trials under
        a fault (lab.runner.groups). ``cells``: the outcomes they count for."""
        browser, width = self.ctx.browser, width or self.concurrency
        if fault.solo:  # armed by one trial's own moment (drop at=write): one at a time
            width = 1
        held = fault.window == "trial" and (fault.name == "none" or not self.client.heals_before_reading)
        if not held:
            # One-send faults (and, for a client that reads through the faulted link, any fault):
            # groups of trials run in lockstep, and the fault is armed once for the whole group
            # around its trials' fault turns (a toxic acts on the whole proxy).
            await groups.in_lockstep(
                lambda: [x for x in (take() for _ in range(width)) if x is not None],
                fault,
                self.targets,
                lambda item, step: self._trial(browser, item[0], fault, step, None, item[1]),
                _lockstep_said,
            )
            return
        try:  # held on for all of them (the page loads too): a trial starts as soon as another ends
            with fault.on(self.targets) as evidence:
                for out in cells:
                    out.fault_evidence = evidence
                await groups.pooled(
                    take,
                    width,
                    lambda item, release: self._trial(browser, item[0], fault, None, evidence, item[1], release),
                )
        except LabError as exc:
            for out in cells:
                out.fault_error = str(exc)
                for t in out.trials:
                    t.trial.fault_confirmed = False

    async def _trial(
        self,
        browser: Browser,
        plan: TrialPlan,
        fault: Fault,
        step: "Lockstep | None",
        evidence: str | None,
        out: CellOutcome,
        release: groups.Release = lambda: None,
    ) -> TrialOutcome:
        """One trial in a pooled browser context: the conversation, then at once (a short TTL
        would otherwise expire the key before it is read) quiescence, the final read from
        Redis, the checker. Trace and screenshot are kept for failing trials only. ``release``:
        the client's to call once what is left of its trial only waits (its place in a pooled
        group goes to the next trial; its context stays with it to the end)."""
        model = standin.serving(self.model, plan)  # the stand-in serving this trial's calls, if any
        if model is not None:
            plan = tagged(plan)
        t_queued = time.perf_counter()
        slot = await self.ctx.slots.take()
        waited_s = time.perf_counter() - t_queued
        try:
            d, trial, conv_s = await self._converse(browser, plan, model, step, evidence, slot, release)
            d.timing.add("slot", waited_s)
            outcome, dump = await self._finish(plan, model, fault, d, trial, conv_s)
            keep = outcome.failed and self.keep_artifacts
            # Trace and screenshot (the browser's costliest artifacts) for the first failing
            # trials of each cell; every failing trial keeps its logs, dumps and replay command.
            traced = keep and d.trace and self._traced.get(plan.cell.cell_id, 0) < self.traced_per_cell
            if traced:
                self._traced[plan.cell.cell_id] = self._traced.get(plan.cell.cell_id, 0) + 1
            with d.timing("artifacts"):
                shot = await bounded(d.screenshot(), 10) if traced else None
            with d.timing("close"):
                try:
                    await asyncio.wait_for(d.close(trace_dir=self._trial_dir(plan) if traced else None), 30)
                except Exception:  # TimeoutError included: a stuck close must not hang the run
                    slot.broken = True  # ... and this context is not trusted again
            if keep:
                with d.timing("artifacts"):
                    outcome.artifacts = await self.client.artifacts(
                        self.out_dir / "trials" / plan.trial_id, outcome, d, dump, shot
                    )
            outcome.phases = d.timing.seconds
        finally:
            await self.ctx.slots.put(slot)  # a broken one is closed and replaced
        out.trials.append(outcome)  # as soon as it is known: a Ctrl-C report includes it
        self.on_trial(out.cell, outcome)
        return outcome

    async def _converse(
        self,
        browser: Browser,
        plan: TrialPlan,
        model: ModelLink | None,
        step: "Lockstep | None",
        evidence: str | None,
        slot: Slot,
        release: groups.Release,
    ) -> tuple[TrialPage, Trial, float]:
        """Phase 1 under a deadline: a hung browser step makes the trial unknown (naming the
        step), never the run hang."""
        t0 = time.monotonic()
        c = plan.cell
        trial = Trial(
            plan.trial_id,
            fault=c.fault,
            fault_params=c.params,
            refresh=c.refresh,
            turns=c.turns,
            fault_turn=plan.fault_turn or None,
            seed=plan.seed,
        )
        # Once a cell has its traced failing trials, its further trials run untraced: a trace
        # costs the browser about a quarter of a trial (measured: 0.24 vs 0.19 s per trial).
        traced_enough = self._traced.get(plan.cell.cell_id, 0) >= self.traced_per_cell
        d = self.client.driver(browser, plan, self.trace and not traced_enough)
        limit_s = self.client.limit_s(plan)
        try:
            async with standin.paced(model, plan):
                await asyncio.wait_for(self.client.converse(plan, d, trial, step, evidence, slot, release), limit_s)
        except TimeoutError:
            why = f"trial exceeded {limit_s:.0f} s while the driver was at: {d.phase}"
            trial.errors.append(why)
            if not self.client.errors_make_unknown:  # a note there: this one voids the trial
                trial.unknown = trial.unknown or why
            trial.refresh_reached = False
            trial.sends = d.sends
            slot.broken = True
            if step is not None:
                step.abandon()
        # Per-trial cost: the conversation itself, not the time spent queued behind others.
        return d, trial, time.monotonic() - t0

    def _trial_dir(self, plan: TrialPlan) -> Path:
        """A failing trial's folder in the run's report: its trace is written there directly
        (no temporary folder that a killed run would leave behind)."""
        p = self.out_dir / "trials" / plan.trial_id
        p.mkdir(parents=True, exist_ok=True)
        return p

    def _toxics(self) -> dict[str, Any]:
        try:
            return self.targets.toxiproxy.snapshot()
        except LabError as exc:
            return {"error": str(exc)}

    async def _finish(
        self, plan: TrialPlan, model: ModelLink | None, fault: Fault, d: TrialPage, trial: Trial, conversation_s: float
    ) -> tuple[TrialOutcome, dict[str, Any]]:
        """Phase 2 (faults healed): quiescence, the final read from Redis, the checker."""
        t0 = time.monotonic()
        await self.client.quiesce(d, trial)
        # The stand-in's record is read beside Redis (both after quiescence, neither waits on the
        # other); what is left of it after the final read is the phase's.
        t_read = time.perf_counter()
        (sid, dump, read_at), _ = await asyncio.gather(
            self.client.final_read(d, trial), standin.read_calls(model, trial)
        )
        waited_s = time.perf_counter() - t_read - d.timing.seconds.get("final_read", 0.0)
        if model is not None:
            d.timing.add("model_record", max(0.0, waited_s))
        self.client.preconditions(plan, fault, trial, sid, read_at)
        with d.timing("check"):
            result = check_safe(trial)
        if trial.errors and result.validity == "valid" and self.client.errors_make_unknown:
            result.validity = "unknown"
            result.reasons.extend(trial.errors)
        return TrialOutcome(
            plan,
            trial,
            result,
            seconds=conversation_s + time.monotonic() - t0,
            mode=self.stack.mode,
            model=model is not None,
        ), dump


def _lockstep_said(group: list[tuple[TrialPlan, CellOutcome]], _: list[TrialOutcome], step: Lockstep) -> None:
    """What a group's Lockstep said of its fault, on each of the group's cells."""
    for out in {id(o): o for _, o in group}.values():
        if step.error:
            out.fault_error = step.error
        out.fault_evidence = out.fault_evidence or step.evidence
