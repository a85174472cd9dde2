"""The lab's override for an app's compose file (lab.stack.compose.override): pure rules, no
engine. The compose e2e tests (tests/compose/test_compose_target.py) run what it writes."""

from __future__ import annotations

from typing import Any

import pytest

from lab.common.errors import UsageError
from lab.stack.compose import override as ov
from lab.stack.compose.substitutes import family

AT = ov.Published(http=18301, redis=16379, toxiproxy=18474)
RAW: dict[str, Any] = {"services": {"app": {"build": "."}, "redis": {"image": "redis:7"}}}


def resolved(env: dict[str, str] | None = None, app_networks: dict[str, Any] | None = None) -> dict[str, Any]:
    app: dict[str, Any] = {"environment": env if env is not None else {"REDIS_URL": "redis://redis:6379/0"}}
    if app_networks is not None:
        app["networks"] = app_networks
    return {"services": {"app": app, "redis": {"image": "redis:7"}}}


def app(**kw: Any) -> ov.AppCompose:
    base = {
        "file": "/x/compose.yaml",
        "service": "app",
        "redis_service": "redis",
        "redis_env": "REDIS_URL",
        "redis_host": None,
        "port": 3000,
    }
    return ov.AppCompose(**(base | kw))  # type: ignore[arg-type]


def make(raw: dict[str, Any] = RAW, res: dict[str, Any] | None = None, **kw: Any) -> ov.Plan:
    return ov.plan(raw, res or resolved(), app(**kw), AT, "toxiproxy:img", "/run/toxiproxy.json", {"APP_BUGS": "x"})


def test_env_route_swaps_only_host_and_port() -> None:
    p = make(res=resolved({"REDIS_URL": "redis://cache:6380/2"}))
    env = p.override["services"]["app"]["environment"]
    assert env == {"APP_BUGS": "x", "REDIS_URL": f"redis://{ov.TOXIPROXY}:6379/2"}
    assert (p.listen, p.upstream) == ("0.0.0.0:6379", "cache:6380")
    assert "redis" not in p.override["services"]["redis"].get("networks", {})  # Redis stays where it is
    assert (p.auth, p.db, p.secret_url) == ("", 2, "")  # the lab reads db 2 too


def test_a_redis_password_stays_out_of_the_override_and_the_lab_logs_in_with_it() -> None:
    """The app's URL holds its Redis password: the override (a file the lab writes) names a
    variable instead, which the lab sets for its compose commands; the lab's own reads and faults
    use the same user, password and db."""
    p = make(res=resolved({"REDIS_URL": "redis://chat:s3cret-pw@cache:6380/3"}))
    env = p.override["services"]["app"]["environment"]
    assert env["REDIS_URL"] == "${" + ov.SECRET_URL_ENV + ":-}" and "s3cret-pw" not in str(p.override)
    assert p.secret_url == f"redis://chat:s3cret-pw@{ov.TOXIPROXY}:6379/3"
    assert (p.auth, p.db) == ("chat:s3cret-pw", 3)
    assert "s3cret-pw" in p.route  # the terminal's line: redacted by the run (lab.common.redact)


@pytest.mark.parametrize(
    "url, want",
    [
        ("redis://redis:6379/0", ("", 0)),
        ("redis://:pw-123456@redis:6379", (":pw-123456", 0)),
        ("redis://u:p%40ss@redis/5", ("u:p%40ss", 5)),
        ("redis://redis:6379?db=4", ("", 4)),
        ("redis:6379", ("", 0)),
    ],
)
def test_url_login(url: str, want: tuple[str, int]) -> None:
    assert ov.url_login(url) == want


def test_url_login_refuses_a_db_that_is_not_a_number() -> None:
    with pytest.raises(UsageError, match="'x' is not a number"):
        ov.url_login("redis://redis:6379/x")


def test_env_route_plain_host_port_value() -> None:
    p = make(res=resolved({"REDIS_URL": "cache:6390"}))
    assert p.override["services"]["app"]["environment"]["REDIS_URL"] == f"{ov.TOXIPROXY}:6379"
    assert p.upstream == "cache:6390"


def test_env_route_missing_variable_says_what_to_do() -> None:
    with pytest.raises(UsageError) as exc:
        make(res=resolved({}))
    assert "no such variable" in exc.value.message and "redis_host" in exc.value.hint


def test_takeover_moves_redis_to_its_own_network_and_toxiproxy_takes_the_name() -> None:
    p = make(redis_env=None, redis_host="redis", res=resolved(app_networks={"front": None, "default": None}))
    svc = p.override["services"]
    assert svc["redis"]["networks"] == {ov.STORE: {"aliases": [ov.UPSTREAM]}}
    assert svc[ov.TOXIPROXY]["networks"] == {
        "default": {"aliases": ["redis"]},
        "front": {"aliases": ["redis"]},
        ov.STORE: None,
    }
    assert p.upstream == f"{ov.UPSTREAM}:6379" and p.override["networks"] == {ov.STORE: {}}
    assert "REDIS_URL" not in svc["app"].get("environment", {})


def test_takeover_refused_when_redis_names_its_networks() -> None:
    raw = {"services": {"app": {}, "redis": {"image": "redis:7", "networks": ["back"]}}}
    with pytest.raises(UsageError) as exc:
        make(raw=raw, redis_env=None, redis_host="redis")
    assert "cannot take a service off a network" in exc.value.message and "redis_env" in exc.value.hint


def test_publishes_backend_and_redis_on_loopback_and_waits_for_toxiproxy() -> None:
    svc = make().override["services"]
    assert svc["app"]["ports"] == ["127.0.0.1:18301:3000"]
    assert svc["app"]["depends_on"] == {ov.TOXIPROXY: {"condition": "service_healthy"}}
    assert svc["redis"]["ports"] == ["127.0.0.1:16379:6379"]
    assert svc[ov.TOXIPROXY]["ports"] == ["127.0.0.1:18474:8474"]
    assert "version" not in make().override  # the app's file has none: docker-compose 1.29 wants them equal


def test_unknown_service_names_the_ones_there() -> None:
    with pytest.raises(UsageError) as exc:
        make(service="web")
    assert "'web'" in exc.value.message and "app, redis" in exc.value.hint


@pytest.mark.parametrize(
    ("ports", "want"),
    [
        (["127.0.0.1:3000:3000/tcp"], [("app", "127.0.0.1", 3000)]),
        (["3000:3000"], [("app", "0.0.0.0", 3000)]),
        (["3000"], []),  # a container port only: the engine picks a free one
        ([{"target": 3000, "published": 8080, "host_ip": "127.0.0.1"}], [("app", "127.0.0.1", 8080)]),
    ],
)
def test_published_ports(ports: list[Any], want: list[tuple[str, str, int]]) -> None:
    assert ov.published_ports({"services": {"app": {"ports": ports}}}) == want


@pytest.mark.parametrize(
    ("ref", "want"),
    [
        ("redis:7.2-bookworm", "redis"),
        ("docker.io/library/node:20-slim", "node"),
        ("node", "node"),
        ("python:3.12-slim", "python"),
        ("docker.io/library/python:3.11-alpine@sha256:0123", "python"),
        ("localhost:5000/redis", None),
        ("bitnami/redis:7", None),
        ("postgres:16", None),
    ],
)
def test_stand_in_families(ref: str, want: str | None) -> None:
    assert family(ref) == want


def test_the_stand_in_model_serves_the_backend_through_toxiproxy_and_its_record_is_published() -> None:
    """[model] on a compose target: the stand-in is a service of the project (the lab's package
    mounted read-only), the backend's model variables name Toxiproxy's "model" proxy -- set last,
    over a provider's address the app's file gives -- and the backend waits for the stand-in."""
    at = ov.Published(http=18301, redis=16379, toxiproxy=18474, model=18410, model_proxy=18411)
    model = ov.ModelService(
        "python:3.11-slim", "/src/lab", {"OPENAI_BASE_URL": "{model_url}/v1", "OPENAI_API_KEY": "k"}
    )
    res = resolved({"REDIS_URL": "redis://redis:6379/0", "OPENAI_BASE_URL": "https://api.example.invalid/v1"})
    p = ov.plan(RAW, res, app(), at, "toxiproxy:img", "/run/toxiproxy.json", {}, model)
    services = p.override["services"]
    assert services["app"]["environment"]["OPENAI_BASE_URL"] == f"http://{ov.TOXIPROXY}:{ov.MODEL_LISTEN}/v1"
    assert services["app"]["depends_on"][ov.MODEL] == {"condition": "service_healthy"}
    stand_in = services[ov.MODEL]
    assert stand_in["volumes"] == [f"/src/lab:{ov.MODEL_SRC}/lab:ro"]
    assert stand_in["ports"] == [f"127.0.0.1:18410:{ov.MODEL_PORT}"]
    assert f"127.0.0.1:18411:{ov.MODEL_LISTEN}" in services[ov.TOXIPROXY]["ports"]
    assert ov.MODEL not in make().override["services"]  # no [model]: no stand-in
