"""An investigation's trials, group by group, through the one runner (lab.runner.runner) with
the black-box client (lab.investigate.run.client): experiments that share a fault in place for
the whole trial (the same fault with the same parameters: latency 300 ms for after_ack and
in_flight) run their trials in the same groups, under one Lockstep -- the link is faulted once
for all of them, and their trials run side by side instead of one experiment after the other.
Fault-free experiments share one group: a trial starts as soon as another ends.

Each experiment keeps its own trials, ids, seeds, top-up and progress line: a trial that is
unknown (a window the machine did not let it hit) is replaced by another of its experiment, up
to TOP_UP_FACTOR x the trials (an app the experiment cannot judge at all costs that much, and
says why)."""

from __future__ import annotations

import time
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from lab.investigate.browser.settle import NEVER_READ
from lab.investigate.run.blackbox import Prober
from lab.investigate.run.client import BlackBoxClient
from lab.investigate.run.experiments import Experiment, TrialId, prefix
from lab.investigate.run.mid_write import ANSWERED_FIRST, NO_WRITE
from lab.model.attribution import NOT_REFUSED
from lab.faults.standin_plan import PROBES
from lab.investigate.target.link import paced
from lab.model.context import never_streamed
from lab.model.outcome import CellOutcome, TrialOutcome
from lab.plan.schedule import TrialPlan
from lab.runner.run_context import RunContext
from lab.runner.runner import Runner
from lab.stack.model_link import ModelLink

# A trial's unknown reason where the browser's request to the app timed out (blackbox: "driver:"
# and the exception's type: Playwright's TimeoutError).
APP_TIMED_OUT = "driver: TimeoutError"

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
    out: CellOutcome | None = None  # its trials: the group it runs in opens it
    taken: int = 0  # trials handed out (those not yet in out.trials are running)
    said: bool = False  # its progress line

    @property
    def mine(self) -> list[TrialOutcome]:
        return self.out.trials if self.out is not None else []

    @property
    def prefix(self) -> str:
        """What its trial ids begin with (the stand-in paces the calls carrying it)."""
        return prefix(self.no, self.exp)

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
            # ... nor a drop at the write's reply where no send wrote the key (a write never made)
            or all(o.trial.unknown == NO_WRITE for o in self.mine)
            # ... nor a refusal no write met: an app that stores everything before it answers
            # (write_refused at=answer) has no write once the answer has begun
            or all((o.trial.unknown or "").startswith(NOT_REFUSED) for o in self.mine)
            # ... nor requests the app never answered within the page's timeout (a Rust app's
            # history read after Redis came back: 9 trials x 36 s, every one unknown, 2026-12-05)
            or all((o.trial.unknown or "").startswith(APP_TIMED_OUT) for o in self.mine)
            # ... nor an app that served not one history read in any trial (a client shared across
            # event loops answering every request 500: 9 trials x 15 s, 2026-12-07)
            or all((o.trial.unknown or "").startswith(NEVER_READ) for o in self.mine)
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
    run: Run, prober: Prober, members: list[Member], done: list[TrialOutcome], width: int | None = None
) -> None:
    """The members' trials through the one runner (lab.runner.runner), under one fault (their
    first's, built once): ``width`` at a time (default: ``concurrency`` of each). Under a fault,
    each group of trials shares it through one Lockstep (the link faulted once for the group:
    its trials mostly wait on the fault, and two experiments' trials side by side cost about
    what one experiment's do), healed before the trials' settled reads."""
    first = members[0].exp
    t0 = time.monotonic()
    client = BlackBoxClient(prober)
    runner = _runner(prober, client, run.concurrency, done)
    outs = [CellOutcome(m.exp.cell(prober.spec.name)) for m in members]
    for m, out in zip(members, outs):
        m.out = out
    async with AsyncExitStack() as stack:
        # The stand-in streams this experiment's replies slowly enough to be cut (mid_stream), or
        # for a fault whose moment is inside the reply to come before the app's write (write_refused
        # at=answer: streamed whole at once, 2 of 10 were stored before, 2026-12-06).
        for m in members:
            model = run.model if m.exp.refresh == "mid_stream" or m.exp.built.inside_reply else None
            await stack.enter_async_context(paced(model, f"{PROBES} {m.prefix}"))
        with runner.attached(RunContext(prober.browser, prober.pages.pool)):
            await runner.group(
                first.built, lambda: take(run, client, members, t0), outs, width or run.concurrency * len(members)
            )
    for m in members:
        _said(run, m, t0)


async def one(prober: Prober, exp: Experiment, trial_id: str, seed: int) -> TrialOutcome:
    """One trial of ``exp`` on its own through the one runner (the contract check): its
    deadline, its checker and its browser context, as every other trial of the run."""
    client, done = BlackBoxClient(prober), []  # type: BlackBoxClient, list[TrialOutcome]
    out = CellOutcome(exp.cell(prober.spec.name))
    todo = [(client.plan(exp, trial_id, seed, ""), out)]
    runner = _runner(prober, client, 1, done)
    with runner.attached(RunContext(prober.browser, prober.pages.pool)):
        await runner.group(exp.built, lambda: todo.pop() if todo else None, [out], 1)
    return done[0]


def _runner(prober: Prober, client: BlackBoxClient, concurrency: int, done: list[TrialOutcome]) -> Runner:
    return Runner(
        prober.fault_targets.stack,
        Path("."),  # no folder: a black-box trial keeps its record in trials.json
        concurrency=concurrency,
        on_trial=lambda _, o: done.append(o),  # as soon as known: an interrupted run reports it
        keep_artifacts=False,
        trace=False,
        client=client,
        targets=prober.fault_targets,
    )


def take(run: Run, client: BlackBoxClient, members: list[Member], t0: float) -> tuple[TrialPlan, CellOutcome] | None:
    """The members' next trial, in turn (the member that has had fewest first, the longest
    conversation first among them); a member's
    unknown trials are replaced once all of its trials are in, and its line is said once
    nothing more is to come (not at the group's end: fault-free experiments share one group)."""
    for m in members:
        if not m.pending and m.taken == len(m.mine):
            m.more()
            if not m.pending:
                _said(run, m, t0)
    waiting = [m for m in members if m.pending]
    if not waiting:
        return None
    # The longest conversation first among those level: fault-free experiments share a group,
    # and a 12-turn trial begun last would be its tail.
    m = min(waiting, key=lambda m: (m.taken, -m.exp.turns))
    k = m.pending.pop(0)
    m.taken += 1
    tid = m.tid(k)
    assert m.out is not None  # its group has opened it
    return client.plan(m.exp, tid, run._seed(m.no, k), run.replay_command(tid)), m.out


def _said(run: Run, m: Member, t0: float) -> None:
    """The member's progress line, once."""
    if not m.said:
        m.said = True
        run.say(progress(m.exp, m.mine, m.n, time.monotonic() - t0))


def progress(exp: Experiment, mine: list[TrialOutcome], n: int, seconds: float) -> str:
    """One experiment's line: its trials, the unknown ones and why, the ones run in their place."""
    unknown = [o for o in mine if o.result.validity == "unknown"]
    why = unknown[-1].result.reasons[0] if unknown and unknown[-1].result.reasons else ""
    return (
        f"  {exp.label}: {len(mine)} trials in {seconds:.1f} s"
        + (f", {len(unknown)} unknown ({why})" if unknown else "")
        + (f"; {len(mine) - n} more run in their place" if len(mine) > n else "")
    )
