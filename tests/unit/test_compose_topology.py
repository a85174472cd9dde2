"""compose.yaml and toxiproxy.json describe one topology: names, ports, the backend's Redis
address, and the network split that forces the backend through Toxiproxy."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from lab.stack import topology
from lab.common.config import DEFAULT_PORTS, PORT_ENV, ROOT

_VAR = re.compile(r"\$\{(?P<name>[A-Z0-9_]+)(?::-(?P<default>[^}]*))?\}")
# Container ports each service listens on, as compose runs them.
SERVICE_PORTS = {"redis": 6379, "chat": 8000}


def _defaults(text: str) -> str:
    """Resolve ${VAR:-default} as compose would with no variables set."""
    return _VAR.sub(lambda m: m["default"] or "", text)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load(_defaults((ROOT / "compose.yaml").read_text()))


@pytest.fixture(scope="module")
def proxies() -> dict[str, topology.Proxy]:
    return {p.name: p for p in topology.load(ROOT / "toxiproxy.json")}


def test_services_and_official_images(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert set(services) == {"redis", "toxiproxy", "chat"}
    assert services["toxiproxy"]["image"] == "ghcr.io/shopify/toxiproxy:2.12.0"
    assert re.fullmatch(r"redis:\d+\.\d+\.\d+", services["redis"]["image"]), "pin the Redis image"
    assert services["chat"]["build"]["dockerfile"] == "services/chat/Dockerfile"
    assert (ROOT / "services/chat/Dockerfile").is_file()


def test_toxiproxy_loads_the_repository_file(compose: dict[str, Any]) -> None:
    tp = compose["services"]["toxiproxy"]
    assert "-host=0.0.0.0" in tp["command"], "overriding command must repeat -host=0.0.0.0"
    config_arg = next(a for a in tp["command"] if a.startswith("-config="))
    mounted = {v.split(":")[1]: v.split(":")[0] for v in tp["volumes"]}
    assert mounted[config_arg.removeprefix("-config=")] == "./toxiproxy.json"
    assert tp["healthcheck"]["test"] == ["CMD", "/toxiproxy-cli", "list"]


def test_every_proxy_upstream_is_a_service_port(compose: dict[str, Any], proxies: dict[str, topology.Proxy]) -> None:
    for p in proxies.values():
        assert p.upstream_host in compose["services"], p
        assert p.upstream_port == SERVICE_PORTS[p.upstream_host], p


def test_backend_gets_only_the_toxiproxy_redis_address(
    compose: dict[str, Any], proxies: dict[str, topology.Proxy]
) -> None:
    env = compose["services"]["chat"]["environment"]
    assert env["CHAT_REDIS_URL"] == f"redis://toxiproxy:{proxies['redis'].listen_port}/0"
    nets = {name: set(svc.get("networks", [])) for name, svc in compose["services"].items()}
    assert not nets["chat"] & nets["redis"], "the backend must not share a network with Redis"
    assert nets["toxiproxy"] >= nets["chat"] | nets["redis"]


def test_published_ports_match_native_defaults_on_loopback_only(
    compose: dict[str, Any], proxies: dict[str, topology.Proxy]
) -> None:
    published: dict[int, int] = {}
    for svc in compose["services"].values():
        for spec in svc.get("ports", []):
            host, host_port, container_port = spec.split(":")
            assert host == "127.0.0.1", f"{spec}: publish on loopback only"
            published[int(host_port)] = int(container_port)
    assert published[DEFAULT_PORTS["chat_proxy"]] == proxies["chat"].listen_port
    assert published[DEFAULT_PORTS["redis_proxy"]] == proxies["redis"].listen_port
    assert published[DEFAULT_PORTS["toxiproxy"]] == 8474
    assert published[DEFAULT_PORTS["redis"]] == 6379
    assert published[DEFAULT_PORTS["backend"]] == 8000
    # The host-side variables are the ones native mode reads.
    text = (ROOT / "compose.yaml").read_text()
    for name in ("chat_proxy", "redis_proxy", "toxiproxy", "redis", "backend"):
        assert "${" + PORT_ENV[name] + ":-" + str(DEFAULT_PORTS[name]) + "}" in text


def test_healthchecks_and_ordering(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name, svc in services.items():
        assert "healthcheck" in svc, name
    assert services["toxiproxy"]["depends_on"] == {"redis": {"condition": "service_healthy"}}
    assert services["chat"]["depends_on"] == {"toxiproxy": {"condition": "service_healthy"}}


def test_no_keys_docker_compose_1_29_rejects() -> None:
    text = (ROOT / "compose.yaml").read_text()
    for key in ("start_interval", "include:", "!reset", "!override"):
        assert key not in text, key
    assert not re.search(r"^name:", text, re.M)
