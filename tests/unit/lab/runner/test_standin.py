"""A trial's side of the stand-in (lab.runner.standin), against a recording stand-in link: the
plan's model latency set for the trial's calls and cleared after, the record read once every
call ended, and an acknowledged send no call served making the trial unknown."""

from __future__ import annotations

import asyncio
from typing import Any

from lab.model.checker import check
from lab.model.history import Row, Send, Trial
from lab.plan.schedule import Cell, plan_trial, tagged
from lab.runner import standin


class Link:
    """Answers as ModelLink does, from lists; records the plans set and cleared."""

    def __init__(self, calls: list[dict[str, Any]], open_: int = 0, down: bool = False) -> None:
        self.calls, self.open, self.down, self.reads = calls, open_, down, 0
        self.plans: list[tuple[str, Any]] = []

    def plan(self, match: str, **behaviour: Any) -> None:
        self.plans.append(("set", match, behaviour))

    def unplan(self, match: str) -> None:
        self.plans.append(("clear", match, {}))

    def record(self, texts: list[str], since: float = 0.0, match: str = "") -> dict[str, list[dict[str, Any]]]:
        assert match == "chaoslab probe c000-000)"  # only the trial's calls are sent
        if self.down:
            raise ConnectionRefusedError("refused")
        self.open = max(0, self.open - 1)
        self.reads += 1
        return {"calls": self.calls, "open": [{}] * self.open}


def _trial(n: int) -> Trial:
    sends = []
    for turn in range(1, n + 1):
        s = Send(f"m{turn}", f"hello {turn} (chaoslab probe c000-000)", turn, t_invoke=100.0 + turn)
        s.complete("ok", 200, "", 100.5 + turn)
        sends.append(s)
    rows = [Row(s.id, role) for s in sends for role in ("user", "assistant")]
    return Trial("c000-000", sends=sends, final_rows=rows, page_after_refresh=rows)


def _call(t: Trial, turn: int, given: list[int]) -> dict[str, Any]:
    msgs = [{"role": "user", "text": t.sends[g - 1].text} for g in given]
    return {"messages": msgs + [{"role": "user", "text": t.sends[turn - 1].text}], "outcome": "whole"}


def test_the_record_is_read_once_every_call_ended_and_judged() -> None:
    t = _trial(3)
    link = Link([_call(t, 1, []), _call(t, 2, []), _call(t, 3, [1, 2])], open_=2)
    asyncio.run(standin.read_calls(link, t))  # type: ignore[arg-type]
    assert link.open == 0 and link.reads == 2 and len(t.model_calls or []) == 3 and t.errors == []
    assert check(t).told_less == ["m2"]  # turn 1 acknowledged before it left, not given


def test_an_acknowledged_send_no_call_served_leaves_the_trial_unknown() -> None:
    t = _trial(2)
    asyncio.run(standin.read_calls(Link([_call(t, 1, [])]), t))  # type: ignore[arg-type]
    assert any("saw no call for acknowledged turn 2" in e for e in t.errors)
    down = _trial(1)
    asyncio.run(standin.read_calls(Link([], down=True), down))  # type: ignore[arg-type]
    assert any("could not be read" in e for e in down.errors) and down.model_calls is None


def test_the_plans_model_latency_is_the_stand_ins_for_the_trial_then_cleared() -> None:
    link = Link([])
    plan = tagged(plan_trial(Cell((), "none", "after_ack"), 3, "c000-004"))

    async def trial() -> None:
        async with standin.paced(link, plan):  # type: ignore[arg-type]
            assert link.plans == [("set", "chaoslab probe c000-004)", {"ttft_ms": plan.llm_latency_ms})]

    asyncio.run(trial())
    assert plan.llm_latency_ms > 0 and link.plans[-1] == ("clear", "chaoslab probe c000-004)", {})
    assert all(m.endswith("(chaoslab probe c000-004)") for m in plan.messages)
