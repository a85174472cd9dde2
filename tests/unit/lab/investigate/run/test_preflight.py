"""The contract check's rules (lab.investigate.run.preflight.contract_errors) on a spec with [model]:
a send the app acknowledged while the stand-in saw no call carrying it stops the run -- the
app's model calls go elsewhere, and everything said of the model's side would be about calls
the lab cannot see."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lab.investigate.spec import parse as sp
from lab.investigate.run.preflight import contract_errors
from lab.model.history import Send, Trial

EXAMPLE = Path(__file__).resolve().parents[5] / "examples" / "model-flask.toml"
TEXT = "chaoslab probe preflight1 turn 1 qq"


def _trial(calls: list[dict[str, Any]] | None) -> Trial:
    s = Send("s1", TEXT, 1)
    s.complete("ok", 200, "", 1.0)
    t = Trial("preflight1", sends=[s])
    t.model_calls = calls
    return t


def test_an_acknowledged_send_the_stand_in_never_saw_stops_the_run() -> None:
    spec = sp.load(EXAMPLE)
    errors = contract_errors(spec, _trial([]), ["user"])
    assert len(errors) == 1 and "the stand-in model saw no call carrying its message" in errors[0], errors
    assert "OPENAI_BASE_URL" in errors[0]  # the variables the app must read


def test_a_call_carrying_the_send_or_no_model_at_all_is_no_error() -> None:
    spec = sp.load(EXAMPLE)
    call = {"messages": [{"role": "system", "text": "be brief"}, {"role": "user", "text": f"Q: {TEXT}"}]}
    assert contract_errors(spec, _trial([call]), ["user"]) == []
    assert contract_errors(spec, _trial(None), ["user"]) == []  # no record read: nothing to say
    data_spec = sp.load(EXAMPLE.with_name("foreign-app.toml"))  # no [model]
    assert contract_errors(data_spec, _trial([]), ["user"]) == []


def test_a_reply_the_spec_gives_no_place_in_the_answer_is_warned_of() -> None:
    """examples/node/relay.js with RELAY_REPLY=poll: the answer (202) carries no reply, the spec
    names none, the settled history holds one -- the lab would take the answer for the reply's
    (docs/app-shapes.md, "A reply the page polls for"). A spec that places it says nothing."""
    import tomllib

    from lab.investigate.run.preflight import _no_reply_in_answer
    from lab.model.history import Row

    relay = tomllib.loads((EXAMPLE.parent / "node-relay.toml").read_text())
    polled = sp.parse({k: v for k, v in relay.items() if k != "stream"}, EXAMPLE)
    t = _trial(None)
    t.final_rows = [Row("", "user", TEXT), Row("", "assistant", "I read 6 words.")]
    assert "no reply in the chat's answer" in _no_reply_in_answer(polled, t)
    assert _no_reply_in_answer(sp.parse(relay, EXAMPLE), t) == ""  # [stream] follow: it streams there
    polled_said = tomllib.loads((EXAMPLE.parent / "node-relay-poll.toml").read_text())
    assert _no_reply_in_answer(sp.parse(polled_said, EXAMPLE), t) == ""  # reply_from = "history"
    t.final_rows = t.final_rows[:1]  # no reply stored (yet): nothing to say
    assert _no_reply_in_answer(polled, t) == ""
