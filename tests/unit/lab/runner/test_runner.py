"""The runner (lab.runner.runner) with the `none` fault and a client of the test's own making
(lab.runner.client.Client): the runner owns the loop -- the client's observers open around the
whole run, every planned trial driven once through the client, checked by the one checker,
reported to on_trial, its context put back -- and asks the client, not the built-in service,
for the conversation, the quiescence, the final read, the preconditions and the artifacts."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest

from lab.common.config import LabConfig
from lab.common.phases import Phases
from lab.driver.slots import Pool, Slot
from lab.model.history import Row, Send, Trial
from lab.model.outcome import TrialOutcome
from lab.plan.schedule import Cell, TrialPlan, plan_cell
from lab.runner import runner as runner_mod
from lab.runner.run_context import RunContext
from tests.helpers import run_async


class FakePage:
    def __init__(self) -> None:
        self.timing, self.phase, self.sends, self.trace = Phases(), "created", [], False
        self.closed = False

    async def screenshot(self) -> bytes | None:
        return None

    async def close(self, trace_dir: Path | None = None) -> None:
        self.closed = True


class FakeClient:
    """A system that stores every acknowledged turn, except the turns in ``lose``."""

    heals_before_reading = False
    errors_make_unknown = True

    def __init__(self, lose: set[int] | None = None) -> None:
        self.lose = lose or set()
        self.log: list[str] = []
        self.observing = False

    def limit_s(self, plan: TrialPlan) -> float:
        return 30.0

    @asynccontextmanager
    async def observed(self) -> AsyncIterator[None]:
        self.log.append("observe")
        self.observing = True
        try:
            yield
        finally:
            self.observing = False
            self.log.append("unobserve")

    def driver(self, browser: Any, plan: Any, trace: bool) -> FakePage:
        return FakePage()

    async def converse(
        self, plan: Any, d: FakePage, trial: Trial, step: Any, evidence: Any, slot: Any, release: Any
    ) -> None:
        assert self.observing, "a trial ran outside the client's observers"
        for turn, text in enumerate(plan.messages, 1):
            s = Send(f"{plan.trial_id}-{turn}", text, turn, t_invoke=100.0 + turn)
            s.complete("ok", 200, "", 100.5 + turn)
            d.sends.append(s)
        trial.sends = d.sends
        trial.refresh_reached = True
        trial.page_after_refresh = [Row(s.id, r) for s in d.sends for r in ("user", "assistant")]
        self.log.append(f"converse {plan.trial_id}")

    async def quiesce(self, d: FakePage, trial: Trial) -> None:
        self.log.append(f"quiesce {trial.trial_id}")

    async def final_read(self, d: FakePage, trial: Trial) -> tuple[str | None, dict[str, Any], float | None]:
        trial.final_rows = [Row(s.id, r) for s in trial.sends if s.turn not in self.lose for r in ("user", "assistant")]
        return "sid", {"rows": len(trial.final_rows)}, 1.0

    def preconditions(self, plan: Any, fault: Any, trial: Trial, sid: str | None, read_at: float | None) -> None:
        assert sid == "sid" and read_at == 1.0

    async def artifacts(self, folder: Path, outcome: Any, d: FakePage, dump: dict[str, Any], shot: Any) -> Path:
        self.log.append(f"artifacts {outcome.plan.trial_id} {dump}")
        return folder


class Toxiproxy:
    def reset(self) -> None:
        pass

    def snapshot(self) -> dict[str, Any]:
        return {}


class Stack:
    mode = "native"
    cfg = LabConfig()

    def heal(self) -> None:
        pass


@pytest.fixture
def no_browser(monkeypatch: pytest.MonkeyPatch) -> list[Slot]:
    """The run's browser contexts without a browser: slots the fake client never touches."""
    made: list[Slot] = []

    async def make() -> Slot:
        made.append(Slot(None, None))  # type: ignore[arg-type]
        return made[-1]

    @asynccontextmanager
    async def opened(stack: Any, slots: int, trace: bool, out_dir: Path) -> AsyncIterator[RunContext]:
        pool = Pool(make, size=slots)
        await pool.fill()
        yield RunContext(None, pool)  # type: ignore[arg-type]

    monkeypatch.setattr(runner_mod.run_context, "opened", opened)
    return made


def _run(client: FakeClient, tmp_path: Path, trials: int) -> tuple[list[TrialOutcome], list[str]]:
    seen: list[str] = []
    r = runner_mod.Runner(
        Stack(),  # type: ignore[arg-type]
        tmp_path,
        concurrency=2,
        on_trial=lambda c, t: seen.append(t.plan.trial_id if t.plan else ""),
        client=client,
    )
    r.targets.toxiproxy = Toxiproxy()  # type: ignore[assignment]
    cell = Cell((), "none", "settled", 3)
    [out] = run_async(r._run([(cell, plan_cell(cell, trials, 7))]))
    return out.trials, seen


def test_every_trial_runs_once_through_the_client_inside_its_observers(tmp_path: Path, no_browser: list[Slot]) -> None:
    client = FakeClient()
    trials, seen = _run(client, tmp_path, 5)
    assert sorted(seen) == sorted(t.plan.trial_id for t in trials if t.plan) and len(set(seen)) == 5
    assert {t.result.validity for t in trials} == {"valid"}, [t.result.reasons for t in trials]
    assert client.log[0] == "observe" and client.log[-1] == "unobserve"
    assert sum(e.startswith("converse") for e in client.log) == 5 == sum(e.startswith("quiesce") for e in client.log)
    assert not any(e.startswith("artifacts") for e in client.log)  # nothing failed: nothing kept
    assert len(no_browser) == 2  # concurrency 2: two contexts, reused


def test_a_turn_the_clients_store_lost_fails_the_trial_and_keeps_its_artifacts(
    tmp_path: Path, no_browser: list[Slot]
) -> None:
    client = FakeClient(lose={2})
    trials, _ = _run(client, tmp_path, 2)
    assert {t.result.validity for t in trials} == {"invalid"}
    assert all(t.result.lost for t in trials)
    kept = [e for e in client.log if e.startswith("artifacts")]
    assert len(kept) == 2 and all("{'rows': 4}" in e for e in kept)  # the client's own dump


class Latency:
    """A fault in place for the whole trial that records how it was applied."""

    name, window, solo = "latency", "trial", False

    def __init__(self) -> None:
        self.held = 0

    @contextmanager
    def on(self, targets: Any) -> Iterator[str]:
        self.held += 1
        yield "held"


class Stepped(FakeClient):
    """Records whether each trial got a Lockstep (armed around its conversation) or a held fault."""

    def __init__(self, heals_before_reading: bool) -> None:
        super().__init__()
        self.heals_before_reading = heals_before_reading
        self.got: list[str] = []
        self.observing = True  # the caller's observers, open around Runner.attached

    async def converse(
        self, plan: Any, d: FakePage, trial: Trial, step: Any, evidence: Any, slot: Any, release: Any
    ) -> None:
        self.got.append("lockstep" if step is not None else f"held:{evidence}")
        if step is not None:
            step.abandon()  # nothing to arm here: the group must not wait for it
        await super().converse(plan, d, trial, step, evidence, slot, release)


@pytest.mark.parametrize("heals", [False, True], ids=["white_box", "black_box"])
def test_a_whole_trial_fault_is_held_for_the_group_unless_the_client_reads_through_it(
    tmp_path: Path, heals: bool
) -> None:
    """A client whose final read goes through the faulted link (a black box) gets the fault armed
    around each group's conversations (a Lockstep per group), never held on while it reads; the
    built-in service, read directly, keeps it held for the whole group. And a group's work may
    grow while it runs: a source that hands out a second round once the first is in."""
    client, fault = Stepped(heals), Latency()
    cell = Cell((), "none", "settled", 3)
    out = runner_mod.CellOutcome(cell)
    rounds = [plan_cell(cell, 2, 7, prefix="a-"), plan_cell(cell, 2, 8, prefix="b-")]

    def take() -> tuple[TrialPlan, Any] | None:
        if not rounds[0] and len(out.trials) == 2 and len(rounds) > 1:
            rounds.pop(0)  # the first round is in: the next one (an investigation's top-up)
        return (rounds[0].pop(0), out) if rounds[0] else None

    r = runner_mod.Runner(Stack(), tmp_path, concurrency=2, client=client)  # type: ignore[arg-type]

    async def main() -> None:
        made = Pool(lambda: _slot(), size=None)
        with r.attached(RunContext(None, made)):  # type: ignore[arg-type]
            await r.group(fault, take, [out])  # type: ignore[arg-type]

    run_async(main())
    assert len(out.trials) == 4 and {t.result.validity for t in out.trials} == {"valid"}
    assert client.got == (["lockstep"] * 4 if heals else ["held:held"] * 4)
    assert fault.held == (0 if heals else 1)


class Solo(Latency):
    """A one-send fault one trial's own moment arms (drop at=write): it acts on the whole proxy."""

    name, window, solo = "drop", "send", True


def test_a_fault_armed_by_one_trials_moment_runs_its_trials_one_at_a_time(tmp_path: Path) -> None:
    """drop at=write raises its reset when one trial's write reaches Redis: a second trial in the
    same group would have its replies reset at a moment not its own. Groups of one, whatever the
    run's concurrency."""
    cell = Cell((), "drop", "settled", 3)
    out = runner_mod.CellOutcome(cell)
    plans = plan_cell(cell, 3, 7, prefix="a-")
    parties: list[int] = []

    class Counting(Stepped):
        async def converse(self, plan: Any, d: FakePage, trial: Trial, step: Any, *rest: Any) -> None:
            parties.append(step.barrier.parties)
            await super().converse(plan, d, trial, step, *rest)

    client = Counting(True)
    r = runner_mod.Runner(Stack(), tmp_path, concurrency=3, client=client)  # type: ignore[arg-type]

    async def main() -> None:
        with r.attached(RunContext(None, Pool(lambda: _slot(), size=None))):  # type: ignore[arg-type]
            await r.group(Solo(), lambda: (plans.pop(0), out) if plans else None, [out])  # type: ignore[arg-type]

    run_async(main())
    assert len(out.trials) == 3 and parties == [1, 1, 1]


class _Ctx:
    async def close(self) -> None:  # a broken slot's context is closed
        pass


async def _slot() -> Slot:
    return Slot(_Ctx(), None)  # type: ignore[arg-type]


def test_a_trial_past_its_deadline_is_unknown_even_where_errors_are_notes(tmp_path: Path) -> None:
    """A black box's errors are notes (its trial judged as far as it goes); a trial the runner
    cut at its client's deadline tested nothing to its end, and is unknown all the same."""

    class Hung(Stepped):
        errors_make_unknown = False

        def limit_s(self, plan: TrialPlan) -> float:
            return 0.05

        async def converse(
            self, plan: Any, d: FakePage, trial: Trial, step: Any, evidence: Any, slot: Any, release: Any
        ) -> None:
            d.phase = "waiting on the app"
            await asyncio.Event().wait()  # a step that never ends

    cell = Cell((), "none", "settled", 3)
    out = runner_mod.CellOutcome(cell)
    plans = plan_cell(cell, 1, 7)
    r = runner_mod.Runner(Stack(), tmp_path, concurrency=1, client=Hung(False))  # type: ignore[arg-type]

    async def main() -> None:
        with r.attached(RunContext(None, Pool(_slot))):  # type: ignore[arg-type]
            await r.group(Latency(), lambda: (plans.pop(), out) if plans else None, [out])  # type: ignore[arg-type]

    run_async(main())
    [t] = out.trials
    assert t.result.validity == "unknown", t.result
    assert t.trial.unknown == "trial exceeded 0 s while the driver was at: waiting on the app"


def test_a_trial_that_releases_its_place_lets_the_next_one_start_with_its_context_still_held(tmp_path: Path) -> None:
    """Concurrency 1, no fault: the first trial lets its place go, then waits for the second to
    have conversed -- which happens only if the release reaches the runner's pooled loop. The
    first trial's context stays with it (the second gets another)."""
    second_conversed = asyncio.Event()
    slots: dict[str, Any] = {}

    class Releasing(FakeClient):
        async def converse(
            self, plan: Any, d: FakePage, trial: Trial, step: Any, evidence: Any, slot: Any, release: Any
        ) -> None:
            slots[plan.trial_id] = slot
            await super().converse(plan, d, trial, step, evidence, slot, release)
            if plan.trial_id.endswith("000"):
                release()
                await asyncio.wait_for(second_conversed.wait(), 5)
            else:
                second_conversed.set()

    client = Releasing()
    client.observing = True  # the caller's observers, open around Runner.attached
    cell = Cell((), "none", "settled", 3)
    out = runner_mod.CellOutcome(cell)
    plans = plan_cell(cell, 2, 7)
    r = runner_mod.Runner(Stack(), tmp_path, concurrency=1, client=client)  # type: ignore[arg-type]

    async def main() -> None:
        with r.attached(RunContext(None, Pool(_slot))):  # type: ignore[arg-type]
            await r.group(cell.make_fault(), lambda: (plans.pop(0), out) if plans else None, [out])  # type: ignore[arg-type]

    run_async(main())
    assert sorted(t.plan.trial_id for t in out.trials if t.plan) == ["000", "001"]
    assert {t.result.validity for t in out.trials} == {"valid"}
    assert slots["000"] is not slots["001"]
