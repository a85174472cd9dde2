"""The spec's [model] section: the app calls a model. The lab then serves the stand-in model
(lab.standin) behind its own Toxiproxy link and sets, on the app's process, the variables its
SDK reads for the provider's address and key -- by default those each provider's SDK reads::

    [model]
    protocols = ["openai_chat"]          # what the app speaks (one or more)
    env = { LLM_URL = "{model_url}/v1" } # optional: the app's own variables instead

{model_url} is the stand-in's address through Toxiproxy (no trailing slash). An app the lab
does not start ([start] external) must have been started with these variables itself: the run
prints them, `lab proxy up` too, and the contract check stops a run whose send made no call to
the stand-in."""

from __future__ import annotations

from typing import Any

from lab.investigate.spec.fields import bad, table
from lab.investigate.spec.schema import ModelSpec

# The protocols the stand-in speaks (lab/standin/protocols), and what each SDK reads by default:
# the openai SDK OPENAI_BASE_URL (with /v1) and OPENAI_API_KEY, the anthropic SDK
# ANTHROPIC_BASE_URL (without /v1) and ANTHROPIC_API_KEY, the ollama client OLLAMA_HOST. The keys
# are placeholders the stand-in ignores: an SDK refuses to start without one.
KEY = "chaoslab-standin-no-key"
DEFAULT_ENV: dict[str, dict[str, str]] = {
    "openai_chat": {"OPENAI_BASE_URL": "{model_url}/v1", "OPENAI_API_KEY": KEY},
    "openai_responses": {"OPENAI_BASE_URL": "{model_url}/v1", "OPENAI_API_KEY": KEY},
    "anthropic_messages": {"ANTHROPIC_BASE_URL": "{model_url}", "ANTHROPIC_API_KEY": KEY},
    "ollama_chat": {"OLLAMA_HOST": "{model_url}"},
}
PROTOCOLS = tuple(DEFAULT_ENV)


def model(data: dict[str, Any]) -> ModelSpec | None:
    if "model" not in data:
        return None
    m = table(data, "model")
    extra = sorted(set(m) - {"protocols", "env"})
    if extra:
        raise bad(f"model.{extra[0]}", m[extra[0]], "only model.protocols and model.env")
    protocols = m.get("protocols", ["openai_chat"])
    if isinstance(protocols, str):
        protocols = [protocols]
    if not isinstance(protocols, list) or not protocols or any(p not in PROTOCOLS for p in protocols):
        raise bad("model.protocols", m.get("protocols"), f"a list of {', '.join(PROTOCOLS)}")
    env = m.get("env")
    if env is None:
        env = {k: v for p in protocols for k, v in DEFAULT_ENV[p].items()}
    if not isinstance(env, dict) or not env or not all(isinstance(v, str) for v in env.values()):
        raise bad("model.env", env, 'a table of NAME = "value" strings, e.g. { OPENAI_BASE_URL = "{model_url}/v1" }')
    if not any("{model_url}" in v for v in env.values()):
        raise bad("model.env", env, "a variable holding {model_url}: the app must be given the stand-in's address")
    return ModelSpec(tuple(protocols), dict(env))
