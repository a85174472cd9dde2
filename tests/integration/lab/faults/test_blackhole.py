import pytest
import redis

from lab.faults import Targets, make


def test_blackhole_makes_commands_time_out(targets: Targets, via_proxy) -> None:
    with make("blackhole").on(targets):
        with pytest.raises(redis.exceptions.TimeoutError):
            via_proxy(timeout_s=0.5).ping()
    assert via_proxy().ping() is True
