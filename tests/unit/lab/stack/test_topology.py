import json
from pathlib import Path

import pytest

from lab.stack import topology
from lab.common.config import ROOT, LabConfig
from lab.common.errors import UsageError


def test_repository_file_has_the_two_proxies_in_compose_form() -> None:
    proxies = {p.name: p for p in topology.load(ROOT / "toxiproxy.json")}
    assert set(proxies) == {"redis", "chat"}
    assert proxies["redis"].upstream_host == "redis"
    assert proxies["chat"].upstream_host == "chat"
    assert all(p.listen.startswith("[::]:") for p in proxies.values())


def test_native_render_substitutes_loopback_and_lab_ports() -> None:
    cfg = LabConfig.from_env(
        {
            "LAB_REDIS_PORT": "17379",
            "LAB_REDIS_PROXY_PORT": "17380",
            "LAB_BACKEND_PORT": "17081",
            "LAB_CHAT_PROXY_PORT": "17080",
        }
    )
    rendered = {p.name: p for p in topology.render_native(topology.load(ROOT / "toxiproxy.json"), cfg)}
    assert rendered["redis"].listen == "127.0.0.1:17380"
    assert rendered["redis"].upstream == "127.0.0.1:17379"
    assert rendered["chat"].listen == "127.0.0.1:17080"
    assert rendered["chat"].upstream == "127.0.0.1:17081"


@pytest.mark.parametrize(
    "content, fragment",
    [
        ("{not json", "is not valid JSON"),
        ('{"redis": {}}', "must be a JSON array"),
        ('[{"name": "redis", "listen": "[::]:1", "upstream": "redis:6379"}]', "out of range"),
        ('[{"name": "redis", "listen": "nope", "upstream": "redis:6379"}]', "is not host:port"),
        ('[{"name": "redis", "upstream": "redis:6379"}]', "lacks string field(s) listen"),
        ('[{"name": "redis", "listen": "[::]:16380", "upstream": "redis:6379"}]', "missing proxy chat"),
        (
            '[{"name": "redis", "listen": "[::]:16380", "upstream": "redis:6379", "enabled": "yes"}]',
            "enabled must be true or false",
        ),
    ],
)
def test_malformed_file_is_refused_with_the_reason(tmp_path: Path, content: str, fragment: str) -> None:
    path = tmp_path / "toxiproxy.json"
    path.write_text(content)
    with pytest.raises(UsageError) as err:
        topology.load(path)
    assert fragment in str(err.value) and str(path) in str(err.value)


def test_missing_file_says_how_to_restore_it(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is missing") as err:
        topology.load(tmp_path / "toxiproxy.json")
    assert "git checkout" in str(err.value)


def test_unknown_upstream_service_is_refused_in_native_mode(tmp_path: Path) -> None:
    path = tmp_path / "toxiproxy.json"
    data = json.loads((ROOT / "toxiproxy.json").read_text())
    data.append({"name": "db", "listen": "[::]:17555", "upstream": "postgres:5432"})
    path.write_text(json.dumps(data))
    with pytest.raises(UsageError, match="postgres"):
        topology.render_native(topology.load(path), LabConfig.from_env({}))
