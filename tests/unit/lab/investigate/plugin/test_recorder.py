"""pytest --lab-target's recorder: a login the user's own test makes on the spec's [auth] route
gives a token that is a secret from then on (the session's redaction scope scrubs it from the
target's log); a failed login's answer has none."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from lab.common import redact
from lab.investigate.spec import parse as sp
from lab.investigate.plugin.recorder import Recorder

ROOT = Path(__file__).resolve().parents[5]


class FakeContext:
    pages: list[Any] = []

    def on(self, event: str, handler: Any) -> None:
        pass


def _response(method: str, url: str, body: Any) -> Any:
    return SimpleNamespace(request=SimpleNamespace(method=method, url=url), url=url, text=lambda: json.dumps(body))


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("CHAT_USER", "ada")
    monkeypatch.setenv("CHAT_PASSWORD", "pw-0123456789")
    redact.clear()
    yield
    redact.clear()


def test_the_tokens_of_the_tests_own_logins_become_secrets() -> None:
    rec = Recorder(sp.load(ROOT / "examples" / "fastapi-rest.toml"), FakeContext(), "redis://x", "t", 1)  # type: ignore[arg-type]
    rec._response(_response("POST", "http://127.0.0.1:18193/api/login", {"token": "tok-abcdef123"}))
    rec._response(_response("POST", "http://127.0.0.1:18193/api/login", {"detail": "bad credentials"}))
    rec._response(_response("GET", "http://127.0.0.1:18193/api/login", {"token": "not-a-login-1"}))
    rec._keep_tokens_secret()
    assert redact.known() == {"tok-abcdef123"}


def test_a_spec_without_a_token_login_records_no_login() -> None:
    rec = Recorder(sp.load(ROOT / "examples" / "foreign-app.toml"), FakeContext(), "redis://x", "t", 1)  # type: ignore[arg-type]
    rec._response(_response("POST", "http://127.0.0.1:18191/api/login", {"token": "tok-abcdef123"}))
    assert rec._logins == []


def test_the_sends_made_while_a_test_applied_fault_was_in_force_are_under_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """inject() at 10.0, removed at 20.0: a send at 15.0 is under the fault; 5.0 and 20.0 are not."""
    from lab.investigate.plugin import recorder

    rec = Recorder(sp.load(ROOT / "examples" / "foreign-app.toml"), FakeContext(), "redis://x", "t", 1)  # type: ignore[arg-type]
    clock = iter([10.0, 20.0])
    monkeypatch.setattr(recorder.time, "time", lambda: next(clock))
    removed = rec.fault_applied("proxy redis disabled")
    removed()
    ((on, off),) = rec._fault_windows
    assert [recorder._inside(t, on, off) for t in (5.0, 15.0, 20.0)] == [False, True, False]
    assert recorder._inside(99.0, 10.0, None)  # not removed: in force until the test's end
    assert rec._fault_evidence == "proxy redis disabled"


def test_the_settled_read_is_lab_investigates_rule_so_reads_going_back_are_flapping(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A history that keeps going back to what it was never settles: the trial is unknown and
    flapping, as in lab investigate (the history_flapping diagnosis reads it)."""
    from lab.investigate.plugin import recorder

    bodies = iter([["user:a"], ["user:a", "bot:b"]] * 50)

    def get(url: str, **kw: Any) -> Any:
        text = json.dumps({"messages": next(bodies)})
        return SimpleNamespace(status=200, text=lambda: text)

    ctx = SimpleNamespace(pages=[], on=lambda *a: None, request=SimpleNamespace(get=get))
    rec = Recorder(sp.load(ROOT / "examples" / "foreign-app.toml"), ctx, "redis://x", "t", 1)  # type: ignore[arg-type]
    monkeypatch.setattr(rec, "session_id", lambda: "s1")
    monkeypatch.setattr(recorder, "QUIESCENCE_DEADLINE_S", 0.3)
    t = recorder.Trial("t")
    assert rec._settled(t) is None
    assert t.flapping and t.flapping["returns"] >= 2 and t.flapping["rows"] == [1, 2]
    assert t.unknown and "reads went back to earlier contents" in t.unknown


def test_a_send_is_answered_with_its_first_byte_not_its_bodys_end() -> None:
    """A user's test that awaits fetch() has the status with the headers and may send the next
    message before the body is in: the send's answer is then, as the lab's own page logs it."""
    rec = Recorder(sp.load(ROOT / "examples" / "foreign-app.toml"), FakeContext(), "redis://x", "t", 1)  # type: ignore[arg-type]
    timing = {"startTime": 1_000_000.0, "responseStart": 5.0, "responseEnd": 45.0}
    req = SimpleNamespace(post_data=json.dumps({"message": "hi"}), timing=timing, failure=None)
    resp = SimpleNamespace(status=200, headers={}, text=lambda: json.dumps({"reply": "hello"}), request=req)
    s = rec._send(req, resp)  # type: ignore[arg-type]
    assert s.outcome == "ok" and s.t_invoke == 1000.0 and s.t_complete == 1000.005 and s.ms == 5.0
    failed = rec._send(SimpleNamespace(post_data="{}", timing={**timing, "responseEnd": -1}, failure="net::ERR"), None)  # type: ignore[arg-type]
    assert failed.outcome == "info" and failed.t_complete is not None and failed.t_complete >= 1000.0


def test_the_tests_model_calls_begin_at_its_own_start_not_a_second_before() -> None:
    """A user's tests may send the same texts test after test: the calls of the test before,
    which end within a second of this one's start, are not this test's."""
    rec = Recorder(sp.load(ROOT / "examples" / "foreign-app.toml"), FakeContext(), "redis://x", "t", 1)  # type: ignore[arg-type]
    assert rec._t0 - rec._calls_from <= 0.010


def test_a_fixed_session_id_is_the_specs_as_lab_investigate_reads_it() -> None:
    """[session] from = "fixed": every browser's conversation is the spec's one id -- the
    recorder reads it where lab investigate does (identity.fixed_id), not from the test's requests."""
    sets = [
        'session.in="header"',
        'session.name="X-Conv"',
        'session.from="fixed"',
        'session.value="conv-7"',
        'session.page_storage="conv"',
    ]
    spec = sp.load(ROOT / "examples" / "foreign-app.toml", sets)
    rec = Recorder(spec, FakeContext(), "redis://x", "t", 1)  # type: ignore[arg-type]
    assert rec.session_id() == "conv-7"


def test_an_id_the_tests_requests_carried_in_the_body_is_the_sessions() -> None:
    """[session] field: a user's test that sends the conversation's id in the message's body (the
    history reads it in the path) -- the recorder finds it where the test put it."""
    sets = ['session.in="header"', 'session.name="X-Conv"', 'session.from="answer"', 'session.id="$.id"']
    sets += ['session.field="conversation_id"', 'session.page_storage="conv"']
    spec = sp.load(ROOT / "examples" / "foreign-app.toml", sets)
    ctx = FakeContext()
    ctx.storage_state = lambda: {"origins": []}  # type: ignore[attr-defined]
    rec = Recorder(spec, ctx, "redis://x", "t", 1)  # type: ignore[arg-type]
    req = SimpleNamespace(url="http://127.0.0.1/api/chat", headers={}, post_data=json.dumps({"conversation_id": "c-9"}))
    rec._answers.append((1.0, SimpleNamespace(request=req)))  # type: ignore[arg-type]
    assert rec.session_id() == "c-9"


def test_a_key_holding_nothing_the_history_shows_is_searched_for_and_followed_where_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As lab investigate's contract check: the key named is read in the db the app writes
    (this test's and the session's next), a spec naming no key the app writes makes the trial
    unknown -- and a history showing nothing (a loss) is no reason to search."""
    from lab.investigate.evidence.key_home import KeyVerdict
    from lab.investigate.plugin import recorder
    from lab.model.history import Row, Send

    asked: list[tuple[int, str]] = []
    verdict = KeyVerdict(use_db=3)

    def follow(keys: Any, store: Any, template: str, record: Any, turn: int, text: str) -> KeyVerdict:
        asked.append((turn, text))
        keys.redis_url = "redis://x/3" if verdict.use_db else keys.redis_url
        return verdict

    monkeypatch.setattr(recorder, "follow", follow)
    rec = Recorder(sp.load(ROOT / "examples" / "foreign-app.toml"), FakeContext(), "redis://x/0", "t", 1)  # type: ignore[arg-type]
    t = recorder.Trial("t")
    t.sends = [Send("t1", "first message", 1), Send("t2", "second message", 2)]
    t.sends[0].complete("fail", 500, "HTTP 500", 1.0)
    t.sends[1].complete("ok", 200, "HTTP 200", 2.0)
    t.redis_final = {"key": "conv:s1", "type": "none", "stored_turns": []}
    keys = SimpleNamespace(redis_url="redis://x/0")
    t.final_rows = []
    assert not rec._found_elsewhere(keys, t) and asked == []  # type: ignore[arg-type]
    t.final_rows = [Row("", "user", "second message"), Row("", "bot", "ok")]
    assert rec._found_elsewhere(keys, t) and asked == [(2, "second message")]  # type: ignore[arg-type]
    assert rec.redis_url == "redis://x/3" and t.unknown is None
    verdict = KeyVerdict(error="[redis] key = 'conv:{session}' names no key the app wrote")
    assert not rec._found_elsewhere(keys, t)  # type: ignore[arg-type]
    assert (
        t.unknown
        and t.unknown.startswith("[redis] key = 'conv:{session}' names no key")
        and "fix [redis] key" in t.unknown
    )


def test_rows_are_placed_by_text_where_the_test_sent_no_ids() -> None:
    """The built-in service's rows carry the message ids its page sends. Where the user's test
    sent none, the sends' ids are the lab's ("t1"): a row's id would match no send, and every
    row would read as a message never sent -- the rows are read by their text instead."""
    rec = Recorder(sp.load(ROOT / "examples" / "chat-service.toml"), FakeContext(), "redis://x", "t", 1)  # type: ignore[arg-type]
    body = json.dumps(
        [{"id": "m-1", "role": "user", "content": "hi"}, {"id": "m-1", "role": "assistant", "content": "yo"}]
    )
    assert [r.id for r in rec._parsed(body)] == ["", ""]
    rec._ids_sent = True
    assert [r.id for r in rec._parsed(body)] == ["m-1", "m-1"]
