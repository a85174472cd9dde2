"""[start] compose = ...: the example parses to what it says; each mistake names the field, the
value and what is expected (the compose e2e tests run the example itself)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from lab.common.errors import UsageError
from lab.investigate.spec import parse as sp

ROOT = Path(__file__).resolve().parents[5]
EXAMPLE = ROOT / "examples" / "compose-app" / "lab.toml"


def _data() -> dict[str, Any]:
    return tomllib.loads(EXAMPLE.read_text())


def test_the_example_parses() -> None:
    start = sp.load(EXAMPLE).start
    app = start.compose
    assert app is not None and Path(app.file) == EXAMPLE.parent / "compose.yaml"
    assert (app.service, app.redis_service, app.redis_env, app.redis_host, app.port, app.redis_port) == (
        "app",
        "redis",
        "REDIS_URL",
        None,
        3000,
        6379,
    )
    assert start.command == () and not start.external and start.ready_timeout_s == 600


def test_a_bug_switch_goes_to_the_backends_environment() -> None:
    assert sp.load(EXAMPLE, ["start.env.APP_BUGS=swallow_errors"]).start.env == {"APP_BUGS": "swallow_errors"}


@pytest.mark.parametrize(
    ("change", "field", "expected"),
    [
        ({"compose": "nope.yaml"}, "start.compose", "an existing compose file"),
        ({"service": None}, "start.service", "the backend's service name"),
        ({"redis_host": "redis"}, "start.redis_env / start.redis_host", "exactly one"),
        ({"redis_env": None}, "start.redis_env / start.redis_host", "exactly one"),
        ({"redis_env": "not a name"}, "start.redis_env", "an environment variable's name"),
        ({"port": None}, "start.port", "the backend's port inside its container"),
        ({"port": 70000}, "start.port", "a number in [1, 65535]"),
        ({"command": "node server.js"}, "start.command", "with compose: only"),
    ],
)
def test_mistakes_name_the_field(change: dict[str, Any], field: str, expected: str) -> None:
    data = _data()
    for k, v in change.items():
        if v is None:
            data["start"].pop(k)
        else:
            data["start"][k] = v
    with pytest.raises(UsageError) as exc:
        sp.parse(data, EXAMPLE)
    assert f"target spec: {field} = " in exc.value.message and expected in exc.value.message
