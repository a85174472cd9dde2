import pytest
import redis

from lab.faults import Targets, make


def test_down_refuses_connections_until_removed(targets: Targets, via_proxy) -> None:
    with make("down").on(targets) as evidence:
        assert "ConnectionRefusedError" in evidence
        with pytest.raises(redis.exceptions.ConnectionError):
            via_proxy().ping()
    assert via_proxy().ping() is True
