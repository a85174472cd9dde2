"""An investigation's trials, group by group: experiments that share a fault in place for the
whole trial (the same fault with the same parameters: latency 300 ms for after_ack and
in_flight) run their trials in the same groups, under one Lockstep -- the link is faulted once
for all of them, and their trials run side by side instead of one experiment after the other.

Each experiment keeps its own trials, ids, seeds, top-up and progress line: a trial that is
unknown (a window the machine did not let it hit) is replaced by another of its experiment, up
to TOP_UP_FACTOR x the trials (an app the experiment cannot judge at all costs that much, and
says why)."""

from __future__ import annotations

import asyncio
import time
from contextlib import AsyncExitStack, nullcontext
from dataclasses import dataclass, field
from typing import Protocol

from lab.investigate.run.blackbox import Prober
from lab.investigate.run import trial_ids
from lab.investigate.run.experiments import Experiment
from lab.investigate.run.trial_ids import TrialId
from lab.investigate.run.mid_write import ANSWERED_FIRST
from lab.investigate.target.link import paced
from lab.model.checker import check_safe
from lab.model.context import never_streamed
from lab.model.history import Trial
from lab.model.outcome import TrialOutcome
from lab.plan.lockstep import Lockstep
from lab.runner import groups as trial_groups
from lab.stack.model_link import ModelLink

# An experiment's unknown trials are replaced until --trials were judged, up to this many times
# --trials in all: a busy machine that misses a window in some trials still gives the rate its
# judged trials; one that misses it in most gives an honest "unknown".
TOP_UP_FACTOR = 3


class Run(Protocol):
    """What of the investigation (lab.investigate.run.investigation) its groups use."""

    trials: int
    concurrency: int
    replay_of: str | None
    model: ModelLink | None

    def say(self, msg: str) -> None: ...
    def _seed(self, no: int, k: int) -> int: ...
    def replay_command(self, trial_id: str, runs: int = 5) -> str: ...


@dataclass
class Member:
    """One experiment of a group: its trials still to run, and what it has got."""

    no: int
    exp: Experiment
    n: int  # the trials it is to judge
    pending: list[int]
    next_k: int
    last_k: int
    top_up: bool
    mine: list[TrialOutcome] = field(default_factory=list)

    @property
    def prefix(self) -> str:
        """What its trial ids begin with (the stand-in paces the calls carrying it)."""
        return trial_ids.prefix(self.no, self.exp)

    def tid(self, k: int) -> str:
        return TrialId(self.no, k).text(self.exp)

    def more(self) -> None:
        """Replace unknown trials once this experiment's are all in (none by the app's code:
        a model_cut of an app that does not stream the model would be unknown again)."""
        judged = sum(o.result.validity != "unknown" for o in self.mine)
        by_code = judged == 0 and (
            (self.exp.fault == "model_cut" and never_streamed([o.trial for o in self.mine]))
            # ... nor an in_flight whose every send was answered before its first write: an app
            # that stores after answering has no write chain before the answer to reload inside.
            or (self.exp.refresh == "in_flight" and all(o.trial.unknown == ANSWERED_FIRST for o in self.mine))
        )
        if not self.pending and self.top_up and judged < self.n and self.next_k < self.last_k and not by_code:
            extra = min(self.n - judged, self.last_k - self.next_k)
            self.pending, self.next_k = list(range(self.next_k, self.next_k + extra)), self.next_k + extra


def shares_fault(a: Experiment, b: Experiment) -> bool:
    """Two experiments whose trials can share groups: one fault, the same parameters, in place
    for the whole trial (a one-send fault is armed around a turn of each trial's own)."""
    return (a.fault, a.params) == (b.fault, b.params) and a.built.window == "trial"


def member(run: Run, no: int, exp: Experiment, start: int, count: int | None) -> Member:
    n = run.trials if count is None else count
    top_up = count is None and not run.replay_of
    return Member(
        no, exp, n, list(range(start, start + n)), start + n, start + (TOP_UP_FACTOR * n if top_up else n), top_up
    )


async def run_group(
    run: Run, prober: Prober, members: list[Member], done: list[TrialOutcome], sem: asyncio.Semaphore | None = None
) -> None:
    """The members' trials, ``concurrency`` of each at a time, under one fault (their first's);
    each group of trials shares it through one Lockstep (the link faulted once for the group:
    its trials mostly wait on the fault, and two experiments' trials side by side cost about
    what one experiment's do). ``sem``: fault-free experiments running side by side share it."""
    first = members[0].exp
    fault = first.built  # one fault for the whole group, every Lockstep of it arms this one
    t0 = time.monotonic()
    async with AsyncExitStack() as stack:
        for m in members:  # mid_stream: the stand-in streams this experiment's replies slowly enough to be cut
            model = run.model if m.exp.refresh == "mid_stream" else None
            await stack.enter_async_context(paced(model, f"chaoslab probe {m.prefix}"))
        if first.fault == "none":
            await _pooled(run, prober, members, done, sem)
        else:

            def after(group: list[tuple[Member, int]], got: list[Trial], _: Lockstep) -> None:
                for (m, _k), t in zip(group, got, strict=True):
                    _keep(run, m, t, done)
                for m in members:
                    m.more()

            await trial_groups.in_lockstep(
                lambda: take(members, run.concurrency * len(members)),  # each member's trials at once, together
                fault,
                prober.fault_targets,
                lambda mk, step: _one(run, prober, mk[0], mk[1], step, sem),
                after,
            )
    for m in members:
        run.say(progress(m.exp, m.mine, m.n, time.monotonic() - t0))


async def _pooled(
    run: Run, prober: Prober, members: list[Member], done: list[TrialOutcome], sem: asyncio.Semaphore | None
) -> None:
    """Fault-free trials: no fault to arm and heal around a group, so no groups either -- a
    trial starts as soon as another ends (lab.runner.groups.pooled). A member's unknown trials
    are replaced once all of its trials are in, as between groups."""
    busy = [0] * len(members)  # each member's trials running

    def take_one() -> tuple[int, int] | None:
        for i, m in enumerate(members):
            if not m.pending and not busy[i]:
                m.more()
        first = next((i for i, m in enumerate(members) if m.pending), None)
        if first is None:
            return None
        busy[first] += 1
        return first, members[first].pending.pop(0)

    async def one(got: tuple[int, int]) -> None:
        i, k = got
        t: Trial | None = None
        try:
            t = await _one(run, prober, members[i], k, None, sem)
        finally:  # kept before it counts as ended: a top-up counts it
            if t is not None:
                _keep(run, members[i], t, done)
            busy[i] -= 1

    await trial_groups.pooled(take_one, run.concurrency * len(members), one)


def _keep(run: Run, m: Member, t: Trial, done: list[TrialOutcome]) -> None:
    """A trial checked (once) and kept: as soon as known, so an interrupted run reports it."""
    o = TrialOutcome(None, t, check_safe(t), seconds=t.seconds, replay=run.replay_command(t.trial_id))
    m.mine.append(o)
    done.append(o)


def take(members: list[Member], size: int) -> list[tuple[Member, int]]:
    """The next group: up to ``size`` pending trials, the members' in turn."""
    group: list[tuple[Member, int]] = []
    while len(group) < size and any(m.pending for m in members):
        for m in members:
            if m.pending and len(group) < size:
                group.append((m, m.pending.pop(0)))
    return group


async def _one(
    run: Run, prober: Prober, m: Member, k: int, step: Lockstep | None, sem: asyncio.Semaphore | None
) -> Trial:
    async with sem or nullcontext():
        return await prober.trial(m.exp, m.tid(k), run._seed(m.no, k), step)


def progress(exp: Experiment, mine: list[TrialOutcome], n: int, seconds: float) -> str:
    """One experiment's line: its trials, the unknown ones and why, the ones run in their place."""
    unknown = [o for o in mine if o.result.validity == "unknown"]
    why = unknown[-1].result.reasons[0] if unknown and unknown[-1].result.reasons else ""
    return (
        f"  {exp.label}: {len(mine)} trials in {seconds:.1f} s"
        + (f", {len(unknown)} unknown ({why})" if unknown else "")
        + (f"; {len(mine) - n} more run in their place" if len(mine) > n else "")
    )
