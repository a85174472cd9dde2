"""[model]: the protocols an app speaks and the variables its SDK reads, filled with the stand-in's
address; each bad value named with what would do."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from lab.common.errors import UsageError
from lab.investigate.spec import parse as sp
from lab.investigate.target import process as target
from lab.investigate.spec.model import DEFAULT_ENV, KEY
from lab.standin import protocols

EXAMPLE = Path(__file__).resolve().parents[5] / "examples" / "model-flask.toml"


def _data(**model: Any) -> dict[str, Any]:
    data = tomllib.loads(EXAMPLE.read_text())
    data["model"] = model
    return data


def test_the_defaults_are_what_each_sdk_reads_and_the_stand_in_speaks_them_all() -> None:
    assert set(DEFAULT_ENV) == set(protocols.load())
    spec = sp.load(EXAMPLE)
    assert spec.model is not None and spec.model.protocols == ("openai_chat",)
    assert spec.model.env == {"OPENAI_BASE_URL": "{model_url}/v1", "OPENAI_API_KEY": KEY}
    both = sp.parse(_data(protocols=["anthropic_messages", "ollama_chat"]), EXAMPLE).model
    assert both is not None and set(both.env) == {"ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "OLLAMA_HOST"}
    values = target.placeholders(spec, "127.0.0.1", 16380, "http://127.0.0.1:18411")
    assert sp.fill(spec.model.env["OPENAI_BASE_URL"], values) == "http://127.0.0.1:18411/v1"


def test_an_apps_own_variable_replaces_the_defaults() -> None:
    own = sp.parse(_data(env={"LLM_URL": "{model_url}/v1", "LLM_KEY": "x"}), EXAMPLE).model
    assert own is not None and own.env == {"LLM_URL": "{model_url}/v1", "LLM_KEY": "x"}


@pytest.mark.parametrize(
    ("model", "says"),
    [
        ({"protocols": ["grpc"]}, "a list of openai_chat, openai_responses"),
        ({"protocols": []}, "a list of"),
        ({"env": {"LLM_KEY": "x"}}, "a variable holding {model_url}"),
        ({"env": {"LLM_URL": 3}}, 'a table of NAME = "value" strings'),
        ({"endpoint": "x"}, "only model.protocols and model.env"),
    ],
)
def test_bad_model_fields_say_what_would_do(model: dict[str, Any], says: str) -> None:
    with pytest.raises(UsageError) as err:
        sp.parse(_data(**model), EXAMPLE)
    assert says in str(err.value)


def test_a_running_app_takes_model_too_its_variables_are_the_owners_to_set() -> None:
    """[start] external with [model]: accepted -- the run prints the variables the owner must
    have started the app with, and the contract check stops a run whose send the stand-in never
    saw (tests/unit/lab/investigate/run/test_preflight.py)."""
    data = _data()
    data["start"] = {"external": True}
    del data["source"]
    spec = sp.parse(data, EXAMPLE)
    assert spec.start.external and spec.model is not None and "OPENAI_BASE_URL" in spec.model.env


def test_model_error_is_in_the_plan_only_for_a_spec_with_model() -> None:
    from lab.investigate.run import experiments

    spec = sp.load(EXAMPLE)
    assert "model_error" in {e.fault for e in experiments.for_spec(spec, 3)}
    data = _data()
    del data["model"]
    bare = sp.parse(data, EXAMPLE)
    assert "model_error" not in {e.fault for e in experiments.for_spec(bare, 3)}
    with pytest.raises(UsageError, match=r"model_error needs a \[model\] section"):
        experiments.only_filter(bare, "model_error", "the spec")


def test_a_refresh_point_asked_for_leaves_out_the_model_faults_of_a_spec_without_model() -> None:
    """--only settled on an app with no [model]: model_stall (a settled experiment of the full
    plan) is not run into an unexercised cell -- the run would exit 3 for a fault it cannot apply."""
    from lab.investigate.run import experiments

    data = _data()
    del data["model"]
    bare = sp.parse(data, EXAMPLE)
    only = experiments.only_filter(bare, "settled", "the spec")
    assert only is not None
    chosen = {e.fault for e in experiments.full_plan(bare, 3) if only(e)}
    assert "none" in chosen and "redis_restart" in chosen and not chosen & experiments.MODEL_FAULTS
    full = experiments.only_filter(sp.load(EXAMPLE), "settled", "the spec")
    assert full is not None and "model_stall" in {
        e.fault for e in experiments.full_plan(sp.load(EXAMPLE), 3) if full(e)
    }


def test_only_can_pin_a_fault_s_parameters() -> None:
    """--only write_refused:at=write: that row alone, not write_refused's other moments; a bare
    name still takes every row of it; an unknown name with parameters is refused all the same."""
    from lab.investigate.run import experiments

    spec = sp.load(EXAMPLE)
    plan = experiments.full_plan(spec, 3)

    def chosen(text: str) -> list[dict[str, object]]:
        only = experiments.only_filter(spec, text, "the spec")
        assert only is not None
        return [dict(e.params) for e in plan if only(e) and e.fault == "write_refused"]

    assert chosen("write_refused:at=write") == [{"at": "write"}]
    assert len(chosen("write_refused")) >= 2 and {"at": "write"} in chosen("write_refused")
    with pytest.raises(UsageError, match="unknown experiment"):
        experiments.only_filter(spec, "write_refusd:at=write", "the spec")
