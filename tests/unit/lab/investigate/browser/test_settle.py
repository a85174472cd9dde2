"""settle.model_ended: the settled read waits for the model calls a trial's sends made (a page
gone mid-answer does not end them), not for a call the lab's own fault holds open, and a call
still streaming at the deadline makes the trial unknown."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lab.investigate.browser import settle
from lab.model.attribution import ANSWER_NOT_THE_MODELS
from lab.model.history import Row, Send, Trial
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


def _rows(n: int) -> list[Row]:
    return [Row(f"m{i}", "user") for i in range(n)]


def test_the_settle_rule_settles_once_the_rows_stayed_the_same_for_the_quiet_window() -> None:
    rule = settle.Settling(0.0)
    assert rule.read(_rows(1), 0.0) is None  # first sight
    assert rule.read(None, 0.125) is None  # a failed read says nothing...
    assert rule.read(_rows(2), 0.25) is None  # a change restarts the stretch
    assert rule.read(_rows(2), 0.25 + settle.QUIET_S - 0.125) is None
    assert rule.read(_rows(2), 0.25 + settle.QUIET_S, counts=False) is None  # (a read begun before the reload)
    assert rule.read(_rows(2), 0.25 + settle.QUIET_S) == _rows(2)
    assert rule.poll_s(0.25) == settle.POLL_S
    assert rule.poll_s(0.25 + settle.QUIET_S - 0.03125) == pytest.approx(0.03125)  # the last poll ends with the window


def test_reads_that_keep_going_back_never_settle_and_are_flapping() -> None:
    rule, t = settle.Settling(0.0), Trial("t")
    for k, n in enumerate([2, 3, 2, 3, 2]):
        assert rule.read(_rows(n), 0.1 * k) is None
    rule.never(t)
    assert t.flapping == {"reads": 5, "changes": 4, "returns": 3, "rows": [2, 3]}
    assert t.unknown and "3 reads went back to earlier contents" in t.unknown
    steady, once = settle.Settling(0.0), Trial("u")
    steady.read(_rows(1), 0.0)
    steady.read(_rows(2), 0.1)
    steady.never(once)
    assert once.flapping is None and once.unknown and once.unknown.startswith("the history never settled")
    assert not once.unknown.startswith(settle.NEVER_READ)  # it was read: it moved


def test_a_history_no_read_of_which_answered_is_said_never_read() -> None:
    """Every read failed (None: a 5xx, or a body not of the spec's form): nothing settled because
    nothing was served -- said so, not as a history that kept changing."""
    rule, t = settle.Settling(0.0), Trial("t")
    for k in range(5):
        assert rule.read(None, 0.1 * k) is None
    rule.never(t)
    assert t.unknown and t.unknown.startswith(settle.NEVER_READ) and t.flapping is None, t.unknown


class _Said(ModelLink):
    """The stand-in's record with one finished call, whole."""

    def __init__(self, reply: str) -> None:
        self.reply = reply

    def _record(self, texts: list[str], since: float, match: str = "") -> dict[str, list[dict[str, Any]]]:
        return {
            "calls": [{"outcome": "whole", "reply": self.reply, "messages": [{"role": "user", "content": texts[0]}]}],
            "open": [],
        }


def test_a_refused_write_leaves_an_answer_unread_unless_it_is_whole_its_own_way(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """write_refused: frames that never reached their end frame, and a plain stream that is not the
    stand-in model's reply to the letter, are not answers; a plain stream that is, is."""
    from pathlib import Path

    from lab.investigate.spec import parse as sp

    root = Path(__file__).resolve().parents[5]
    monkeypatch.setenv("CHAT_USER", "ada")
    monkeypatch.setenv("CHAT_PASSWORD", "not-a-secret")
    ws, plain = sp.load(root / "examples" / "fastapi-ws.toml"), sp.load(root / "examples" / "model-fastapi.toml")

    def ok(streamed: bool) -> Send:
        s = Send(id="s", text="probe turn 2", turn=2, streamed=streamed)
        s.complete("ok", 200, "HTTP 200", 1.0)
        return s

    closed: Any = {"error": "the page's socket closed before the reply ended", "body": "Echo"}
    why = asyncio.run(settle.not_answered(None, ws, ok(True), closed))
    assert why is not None and why.startswith("a faulted send: the reply began and never reached its end frame")
    assert asyncio.run(settle.not_answered(None, ws, ok(True), {"error": None, "body": "Echo"})) is None
    body: Any = {"error": None, "body": "Paris is the capital."}
    assert asyncio.run(settle.not_answered(None, plain, ok(True), body)) is not None  # no stand-in: unread
    assert asyncio.run(settle.not_answered(_Said("Paris is the capital."), plain, ok(True), body)) is None
    assert asyncio.run(settle.not_answered(_Said("Paris."), plain, ok(True), body)) is not None
    assert asyncio.run(settle.not_answered(None, plain, ok(False), {"error": None, "body": "{}"})) is None  # no stream


def test_a_faulted_send_whose_reply_is_not_the_models_is_not_an_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the stand-in, a whole answer's reply ([chat] reply_path) that carries none of the
    model's words is the app's own (an apology in the reply's place): not an answer. One that
    carries them -- trimmed, HTML-escaped, wrapped -- is; without the stand-in nothing is read."""
    from pathlib import Path

    from lab.investigate.spec import parse as sp

    spec = sp.load(Path(__file__).resolve().parents[5] / "examples" / "model-flask.toml")
    said = 'Turn 2 as I see it. You first said "hello..."; just now you said "probe turn..."'

    def ok(reply: str | None) -> Send:
        s = Send(id="s", text="probe turn 2", turn=2, reply=reply)
        s.complete("ok", 200, "HTTP 200", 1.0)
        return s

    body: Any = {"error": None, "body": "{}"}
    sorry = ok("Sorry -- I couldn't save our conversation just now. Please try again.")
    assert asyncio.run(settle.not_answered(_Said(said), spec, sorry, body)) == ANSWER_NOT_THE_MODELS
    for kept in (said, f"  {said}\n", said.replace('"', "&quot;"), f"<p>{said}</p>"):
        assert asyncio.run(settle.not_answered(_Said(said), spec, ok(kept), body)) is None, kept
    assert asyncio.run(settle.not_answered(None, spec, sorry, body)) is None  # no stand-in: nothing to hold it to
    assert asyncio.run(settle.not_answered(_Said(said), spec, ok(None), body)) is None  # no reply path: not read
