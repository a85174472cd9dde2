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
