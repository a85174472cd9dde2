"""settle.model_ended: the settled read waits for the model calls a trial's sends made (a page
gone mid-answer does not end them), not for a call the lab's own fault holds open, and a call
still streaming at the deadline makes the trial unknown."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lab.investigate.browser import settle
from lab.model.history import Send, Trial
from lab.stack.model_link import ModelLink


class _Model(ModelLink):
    """The stand-in's record of open calls as ModelLink reads it: each poll one entry of
    ``polls`` (the last repeats)."""

    def __init__(self, *polls: list[dict[str, Any]]) -> None:
        self.polls, self.asked = list(polls), 0

    def _record(self, texts: list[str], since: float, match: str = "") -> dict[str, list[dict[str, Any]]]:
        self.asked += 1
        return {"calls": [], "open": self.polls.pop(0) if len(self.polls) > 1 else self.polls[0]}


def _trial() -> Trial:
    return Trial(trial_id="t-0", sends=[Send(id="s1", text="probe t-0 turn 1", turn=1)], refresh="mid_stream")


STREAMING = {"behaviour": {"fault": None}, "messages": [{"role": "user", "text": "probe t-0 turn 1"}]}
HELD = {"behaviour": {"fault": "no_first_token"}, "messages": [{"role": "user", "text": "probe t-0 turn 1"}]}


def test_waits_until_the_streaming_call_has_ended() -> None:
    model, t = _Model([STREAMING], [STREAMING], []), _trial()
    asyncio.run(settle.model_ended(model, t))
    assert model.asked == 3 and t.unknown is None


def test_a_call_held_by_the_lab_s_own_fault_is_not_waited_for() -> None:
    model, t = _Model([HELD]), _trial()
    asyncio.run(settle.model_ended(model, t))
    assert model.asked == 1 and t.unknown is None


def test_a_call_still_streaming_at_the_deadline_is_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(settle, "MODEL_END_DEADLINE_S", 0.0)
    model, t = _Model([STREAMING]), _trial()
    asyncio.run(settle.model_ended(model, t))
    assert t.unknown is not None and "still streaming" in t.unknown


def test_no_stand_in_no_wait() -> None:
    t = _trial()
    asyncio.run(settle.model_ended(None, t))
    assert t.unknown is None


# ------------------------------------------------------------------ the settled read beside a reload
class _History:
    """The app's history route: each GET answers the next body (the last repeats), and says
    whether the page's reload was done when it left."""

    def __init__(self, reloaded: asyncio.Event, *bodies: str) -> None:
        self.reloaded, self.bodies, self.after = reloaded, list(bodies), []  # type: asyncio.Event, list[str], list[bool]
        self.sixth = asyncio.Event()

    async def get(self, url: str, **_: Any) -> Any:
        self.after.append(self.reloaded.is_set())
        if len(self.after) >= 6:
            self.sixth.set()
        body = self.bodies.pop(0) if len(self.bodies) > 1 else self.bodies[0]

        class Resp:
            status = 200

            async def text(self) -> str:
                return body

        return Resp()


def _reading(history: _History) -> tuple[Any, Any, Any]:
    from types import SimpleNamespace

    from lab.investigate.browser.pages import Read
    from lab.model.history import Row

    async def history_request(ctx: Any) -> tuple[str, dict[str, str]]:
        return "http://127.0.0.1/history", {}

    pages = SimpleNamespace(
        identity=SimpleNamespace(history_request=history_request),
        spec=SimpleNamespace(chat=SimpleNamespace(timeout_s=5)),
    )
    ctx = SimpleNamespace(request=history)
    return pages, ctx, lambda raw, t: Read(raw["status"], [Row("", "user", raw["body"])])


def test_beside_a_reload_the_history_is_settled_only_on_reads_begun_after_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Quiet for longer than QUIET_S before the reload is done is not settled yet: a read must
    begin once it is (the reload's own GET may change what the app holds)."""
    monkeypatch.setattr(settle, "QUIET_S", 0.02)
    monkeypatch.setattr(settle, "POLL_S", 0.005)

    async def main() -> None:
        reloaded = asyncio.Event()
        history = _History(reloaded, "a")
        pages, ctx, as_rows = _reading(history)
        task = asyncio.ensure_future(settle.final_read(pages, ctx, _trial(), as_rows, reloaded))
        await asyncio.wait_for(history.sixth.wait(), 5)  # six reads, the same, past QUIET_S
        assert not task.done()
        reloaded.set()
        rows = await asyncio.wait_for(task, 5)
        assert [r.text for r in rows or []] == ["a"] and history.after[-1] is True

    asyncio.run(main())


def test_beside_a_reload_a_change_after_it_restarts_the_quiet_stretch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(settle, "QUIET_S", 0.02)
    monkeypatch.setattr(settle, "POLL_S", 0.005)

    async def main() -> None:
        reloaded = asyncio.Event()
        history = _History(reloaded, *["a"] * 6, "b")
        pages, ctx, as_rows = _reading(history)
        task = asyncio.ensure_future(settle.final_read(pages, ctx, _trial(), as_rows, reloaded))
        await asyncio.wait_for(history.sixth.wait(), 5)
        reloaded.set()
        rows = await asyncio.wait_for(task, 5)
        assert [r.text for r in rows or []] == ["b"]

    asyncio.run(main())
