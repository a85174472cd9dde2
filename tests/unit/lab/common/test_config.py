import pytest

from lab.common.config import DEFAULT_PORTS, PORT_ENV, LabConfig, parse_port
from lab.common.errors import UsageError


def test_defaults_avoid_service_defaults_and_unsafe_ports() -> None:
    cfg = LabConfig.from_env({})
    assert cfg.ports == DEFAULT_PORTS
    assert 6379 not in cfg.ports.values() and 8474 not in cfg.ports.values()


def test_env_overrides_each_port() -> None:
    cfg = LabConfig.from_env({PORT_ENV["redis"]: "17000"})
    assert cfg.ports["redis"] == 17000
    assert cfg.redis_url == "redis://127.0.0.1:17000/0"


@pytest.mark.parametrize(
    "value, fragment",
    [
        ("abc", "is not a port number"),
        ("80", "out of range"),
        ("70000", "out of range"),
        ("6000", "Chromium refuses"),
        ("10080", "Chromium refuses"),
    ],
)
def test_bad_port_is_refused_naming_the_variable(value: str, fragment: str) -> None:
    with pytest.raises(UsageError) as err:
        LabConfig.from_env({"LAB_REDIS_PORT": value})
    assert "LAB_REDIS_PORT" in str(err.value) and fragment in str(err.value)


def test_two_services_on_one_port_are_refused() -> None:
    with pytest.raises(
        UsageError,
        match="LAB_BACKEND_PORT and LAB_REDIS_PORT are both 17001|LAB_REDIS_PORT and LAB_BACKEND_PORT are both 17001",
    ):
        LabConfig.from_env({"LAB_REDIS_PORT": "17001", "LAB_BACKEND_PORT": "17001"})


def test_parse_port_accepts_int() -> None:
    assert parse_port(16379, "X") == 16379


def test_redis_urls_carry_an_apps_login_and_db_and_endpoints_hide_the_password() -> None:
    from dataclasses import replace

    cfg = replace(LabConfig(), redis_auth="chat:s3cret-pw", redis_db=3)
    assert cfg.redis_url == f"redis://chat:s3cret-pw@127.0.0.1:{cfg.ports['redis']}/3"
    assert cfg.redis_proxy_url.endswith(f"@127.0.0.1:{cfg.ports['redis_proxy']}/3")
    shown = cfg.endpoints()
    assert shown["redis"] == f"redis://chat:***@127.0.0.1:{cfg.ports['redis']}/3" and "s3cret" not in str(shown)
    assert LabConfig().redis_url == f"redis://127.0.0.1:{LabConfig().ports['redis']}/0"  # the lab's own
