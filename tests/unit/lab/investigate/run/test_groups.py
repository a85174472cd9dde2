"""An experiment's rates count judged trials only: an unknown trial is replaced by another until
--trials were judged, up to TOP_UP_FACTOR x --trials (one trial of one experiment, unknown on a
busy machine, gets two more tries); a replay or a window's round runs exactly what it asked for.
Experiments that share a fault in place for the whole trial run in the same groups, under one
Lockstep; each keeps its own trials, top-up and progress line."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from lab.driver.slots import Pool, Slot
from lab.investigate.browser.settle import NEVER_READ
from lab.investigate.run import groups
from lab.investigate.run.experiments import Experiment
from lab.investigate.run.groups import TOP_UP_FACTOR
from lab.investigate.run.investigation import Investigation
from lab.model.checker import Result
from lab.model.history import Trial
from lab.model.outcome import TrialOutcome
from lab.runner import runner

EXP = Experiment("none", (), "mid_stream", 3, "a cut mid-reply")


class Prober:
    """Trials unknown while ``unknown(k)`` says so (k: the trial's number in its experiment);
    no browser, no link (the runner's pool hands out empty slots)."""

    fault_targets = SimpleNamespace(stack=SimpleNamespace(mode="native"))
    browser = None
    spec = SimpleNamespace(name="app", chat=SimpleNamespace(timeout_s=30.0))

    def __init__(self, unknown: Any, reason: str = "the mid-stream window was not tested") -> None:
        self.unknown, self.ran, self.steps = unknown, [], []  # type: list[str], list[Any]
        self.reason = reason
        self.pages = SimpleNamespace(pool=Pool(_slot))

    async def trial(
        self, exp: Experiment, tid: str, seed: int, step: Any, *, into: Trial, slot: Any, reloaded: Any = None
    ) -> Trial:
        self.ran.append(tid)
        self.steps.append(step)
        into.trial_id, into.refresh, into.turns = tid, exp.refresh, exp.turns
        into.unknown = self.reason if self.unknown(int(tid.rsplit("-", 1)[1])) else None
        return into


async def _slot() -> Slot:
    return Slot(None, None)  # type: ignore[arg-type]


def _trial(fill: Any) -> Any:
    """A Prober.trial of the runner's calling convention, from ``fill(exp, tid, into)``."""

    async def trial(
        exp: Experiment, tid: str, seed: int, step: Any, *, into: Trial, slot: Any, reloaded: Any = None
    ) -> Trial:
        into.trial_id, into.refresh, into.turns = tid, exp.refresh, exp.turns
        await fill(exp, tid, into)
        return into

    return trial


def _run(
    unknown: Any, trials: int = 4, replay: str | None = None, reason: str | None = None, **kw: Any
) -> tuple[list[str], list[TrialOutcome], str]:
    spec = SimpleNamespace(file=Path("app.toml"))
    inv = Investigation(spec, None, [(5, EXP)], trials, Path("."), seed=1, replay_of=replay, out=io.StringIO())  # type: ignore[arg-type]
    prober, done = Prober(unknown, *([reason] if reason else [])), []  # type: Prober, list[TrialOutcome]
    asyncio.run(inv._experiment(prober, 5, EXP, done, **kw))  # type: ignore[arg-type]
    return prober.ran, done, inv.out.getvalue()  # type: ignore[attr-defined]


@pytest.fixture(autouse=True)
def _checker(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checker's verdict here is the trial's own: unknown or valid."""
    monkeypatch.setattr(runner, "check_safe", lambda t: Result("unknown" if t.unknown else "valid"))


def test_unknown_trials_are_replaced_until_enough_were_judged() -> None:
    ran, done, out = _run(lambda k: k in (1, 2, 4))
    assert ran == [f"e5-none-mid_stream-{k:02d}" for k in range(7)]
    assert sum(o.result.validity == "valid" for o in done) == 4
    assert "7 trials" in out and "3 unknown" in out and "3 more run in their place" in out


def test_the_top_up_stops_at_its_cap() -> None:
    ran, done, _ = _run(lambda k: k != 0, trials=2)
    assert len(ran) == TOP_UP_FACTOR * 2 and sum(o.result.validity == "valid" for o in done) == 1


def test_an_experiment_that_judges_nothing_stops_at_the_cap() -> None:
    ran, _, _ = _run(lambda k: True)
    assert len(ran) == TOP_UP_FACTOR * 4


def test_an_experiment_whose_every_request_the_app_left_unanswered_is_not_topped_up() -> None:
    """A Rust app's history read after Redis came back never answered (36 s a trial): more trials
    would wait the same. Only some of them timing out: replaced as any unknown."""
    hung = "driver: TimeoutError: APIRequestContext.get: Timeout 30000ms exceeded."
    assert len(_run(lambda k: True, reason=hung)[0]) == 4
    assert len(_run(lambda k: k == 1, reason=hung)[0]) == 5


def test_an_experiment_whose_app_served_no_history_read_in_any_trial_is_not_topped_up() -> None:
    """Every read of every trial answered 500 for the whole settle wait (a client shared across
    event loops, 15 s a trial): more trials would wait the same. A history that moved but never
    settled, or no read in only some trials: replaced as any unknown."""
    unread = f"{NEVER_READ} within 15 s"
    assert len(_run(lambda k: True, reason=unread)[0]) == 4
    assert len(_run(lambda k: k == 1, reason=unread)[0]) == 5
    moving = "the history never settled (no 2xx read of the spec's form stable for 0.5 s within 15 s)"
    assert len(_run(lambda k: True, reason=moving)[0]) == TOP_UP_FACTOR * 4


def test_a_replay_and_a_windows_round_run_what_they_asked_for() -> None:
    assert len(_run(lambda k: k == 0, replay="e5-none-mid_stream-00")[0]) == 4
    ran, _, _ = _run(lambda k: k == 2, start=2, count=2)
    assert ran == ["e5-none-mid_stream-02", "e5-none-mid_stream-03"]


LATENCY = (("latency_ms", 300),)
AFTER_ACK = Experiment("latency", LATENCY, "after_ack", 3, "stale reads right after the answer")
IN_FLIGHT = Experiment("latency", LATENCY, "in_flight", 3, "a reload inside the last send's writes")
TWO_TABS = Experiment("latency", (("latency_ms", 100),), "two_tabs", 3, "a lost update")
DOWN = Experiment("down", (), "settled", 3, "Redis down for one send")


def test_experiments_sharing_a_whole_trial_fault_run_in_the_same_groups_under_one_lockstep() -> None:
    spec = SimpleNamespace(file=Path("app.toml"))
    plan = [(1, AFTER_ACK), (6, TWO_TABS), (8, IN_FLIGHT), (3, DOWN)]
    inv = Investigation(spec, None, plan, 3, Path("."), seed=1, out=io.StringIO())  # type: ignore[arg-type]
    shared = inv._sharing(plan)
    # Another latency, or a one-send fault (armed around a turn of each trial), is a group of its own.
    assert [[m.no for m in ms] for ms in shared] == [[1, 8], [6], [3]]
    prober, done = Prober(lambda k: k == 0), []  # type: Prober, list[TrialOutcome]
    asyncio.run(groups.run_group(inv, prober, shared[0], done))  # type: ignore[arg-type]
    # First group: both experiments' three trials together (concurrency 6), one Lockstep of 6;
    # then each replaces its own unknown trial (k = 0) with its own next one.
    assert prober.ran[:6] == [
        f"e{no}-latency-{r}-{k:02d}" for k in range(3) for no, r in ((1, "after_ack"), (8, "in_flight"))
    ]
    assert len({id(s) for s in prober.steps[:6]}) == 1 and prober.steps[0].barrier.parties == 6
    assert sorted(prober.ran[6:]) == ["e1-latency-after_ack-03", "e8-latency-in_flight-03"]
    out = inv.out.getvalue()  # type: ignore[attr-defined]
    assert "after_ack/t3: 4 trials" in out and "in_flight/t3: 4 trials" in out and out.count("1 more run") == 2


def test_an_in_flight_answered_before_every_write_is_not_tried_again() -> None:
    """An app that stores after answering has no write chain before the answer: every in_flight
    trial says so, and running more would say it again (as a model_cut of an app that does not
    stream the model). Unknown for another reason, the trials are replaced as usual."""
    from lab.investigate.run.mid_write import ANSWERED_FIRST

    for reason, runs in ((ANSWERED_FIRST, 3), ("in_flight: neither an answer nor a write within 30 s", 9)):
        prober, done = Prober(lambda k: True), []  # type: Prober, list[TrialOutcome]

        async def fill(exp: Experiment, tid: str, t: Trial, prober: Prober = prober, reason: str = reason) -> None:
            prober.ran.append(tid)
            t.unknown = reason

        prober.trial = _trial(fill)  # type: ignore[method-assign]
        inv = Investigation(
            SimpleNamespace(file=Path("a.toml")), None, [(8, IN_FLIGHT)], 3, Path("."), seed=1, out=io.StringIO()
        )  # type: ignore[arg-type]
        asyncio.run(inv._experiment(prober, 8, IN_FLIGHT, done))  # type: ignore[arg-type]
        assert len(prober.ran) == runs, (reason, prober.ran)


def test_fault_free_trials_start_as_soon_as_another_ends() -> None:
    """No fault to arm and heal around a group: a slow trial holds only its own place. Trial 00
    ends only once trial 03 has started; in groups of two, 02 and 03 would wait for 00."""
    fourth_started = asyncio.Event()
    ran: list[str] = []

    async def fill(exp: Experiment, tid: str, t: Trial) -> None:
        ran.append(tid)
        if tid.endswith("-03"):
            fourth_started.set()
        if tid.endswith("-00"):
            await fourth_started.wait()

    prober = Prober(lambda k: False)
    prober.trial = _trial(fill)  # type: ignore[method-assign]
    inv = Investigation(
        SimpleNamespace(file=Path("a.toml")), None, [(5, EXP)], 4, Path("."), seed=1, concurrency=2, out=io.StringIO()
    )  # type: ignore[arg-type]
    done: list[TrialOutcome] = []

    async def main() -> None:
        await asyncio.wait_for(inv._experiment(prober, 5, EXP, done), 10)  # type: ignore[arg-type]

    asyncio.run(main())
    assert ran == [f"e5-none-mid_stream-{k:02d}" for k in range(4)]
    assert [o.trial_id for o in done][-1] == "e5-none-mid_stream-00"  # the slow one ended last


def test_the_fault_free_experiments_trials_run_all_at_once_the_longest_conversation_first() -> None:
    """Each fault-free trial of the plan at once (--trials x experiments, up to the concurrency),
    as a faulted group's are: no trial waits for another's place. The 12-turn experiment's trials
    are handed out first in each round: begun last, they would be the group's tail."""
    long = Experiment("none", (), "settled", 12, "a long conversation")
    inv = Investigation(
        SimpleNamespace(file=Path("a.toml")), None, [(5, EXP), (6, long)], 2, Path("."), seed=1, out=io.StringIO()
    )  # type: ignore[arg-type]
    ran: list[str] = []
    all_in = asyncio.Event()

    async def fill(exp: Experiment, tid: str, t: Trial) -> None:
        ran.append(tid)
        if len(ran) == 4:
            all_in.set()
        await all_in.wait()  # every trial holds its place until all four have one

    prober = Prober(lambda k: False)
    prober.trial = _trial(fill)  # type: ignore[method-assign]
    done: list[TrialOutcome] = []

    async def main() -> None:
        await asyncio.wait_for(inv._trials(prober, done), 10)  # type: ignore[arg-type]

    asyncio.run(main())
    assert ran[0] == "e6-none-settled-00" and ran[2] == "e6-none-settled-01", ran
    assert sorted(o.trial_id for o in done) == sorted(ran) and len(ran) == 4


def test_a_fault_free_experiments_line_is_said_when_its_trials_are_in_not_at_the_groups_end() -> None:
    """Fault-free experiments share one group; each one's progress line comes as its own trials
    are in (a long run shows progress), while another's trial still runs."""
    other = Experiment("none", (), "settled", 3, "the settled history")
    inv = Investigation(
        SimpleNamespace(file=Path("a.toml")), None, [(5, EXP), (6, other)], 2, Path("."), seed=1, out=io.StringIO()
    )  # type: ignore[arg-type]
    out = inv.out  # type: ignore[attr-defined]

    async def fill(exp: Experiment, tid: str, t: Trial) -> None:
        if tid == "e6-none-settled-01":  # held until e5's line is out, at most 5 s
            for _ in range(500):
                if "mid_stream/t3: 2 trials" in out.getvalue():
                    return
                await asyncio.sleep(0.01)
            raise AssertionError("e5's line was not said while e6's trial ran")

    prober = Prober(lambda k: False)
    prober.trial = _trial(fill)  # type: ignore[method-assign]
    members = [groups.member(inv, 5, EXP, 0, None), groups.member(inv, 6, other, 0, None)]
    done: list[TrialOutcome] = []
    asyncio.run(groups.run_group(inv, prober, members, done, 2))  # type: ignore[arg-type]
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and "mid_stream/t3: 2 trials" in lines[0] and "settled/t3: 2 trials" in lines[1], lines
    assert sum(o.result.validity == "valid" for o in done) == 4


def test_the_contract_checks_trial_runs_through_the_runner_and_ends_at_its_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """groups.one (the contract check's trial) is the runner's like every other: a step that
    hangs ends at the client's deadline, the trial unknown and named by where it was -- before,
    the contract check called the prober itself and a hung page hung the run."""
    from lab.investigate.run import client

    for name in ("LIMIT_BASE_S", "QUIESCENCE_DEADLINE_S", "MODEL_END_DEADLINE_S"):
        monkeypatch.setattr(client, name, 0.0)
    monkeypatch.setattr(client, "LIMIT_PER_TURN_S", 0.2)
    prober = Prober(lambda k: False)
    prober.spec = SimpleNamespace(name="app", chat=SimpleNamespace(timeout_s=0.0))  # type: ignore[assignment]

    async def hangs(exp: Experiment, tid: str, t: Trial) -> None:
        await asyncio.Event().wait()

    async def closable() -> Slot:  # the runner closes a timed-out trial's context
        async def close() -> None:
            pass

        return Slot(SimpleNamespace(close=close), None)  # type: ignore[arg-type]

    prober.trial = _trial(hangs)  # type: ignore[method-assign]
    prober.pages = SimpleNamespace(pool=Pool(closable))
    exp = Experiment("none", (), "settled", 1, "contract check")
    o = asyncio.run(groups.one(prober, exp, "preflight1", 1))  # type: ignore[arg-type]
    assert o.trial.trial_id == "preflight1" and o.result.validity == "unknown", o.result
    assert o.trial.unknown and "exceeded" in o.trial.unknown and "preflight" not in o.trial.unknown, o.trial.unknown

    async def answers(exp: Experiment, tid: str, t: Trial) -> None:
        ran.append(tid)

    ran: list[str] = []
    ok = Prober(lambda k: False)
    ok.trial = _trial(answers)  # type: ignore[method-assign]
    done = asyncio.run(groups.one(ok, exp, "preflight2", 2))  # type: ignore[arg-type]
    assert ran == ["preflight2"] and done.trial.seed == 2 and done.result.validity != "unknown", done.result
