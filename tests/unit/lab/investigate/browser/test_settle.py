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
