import pytest
import redis

from lab.common.errors import UsageError
from lab.faults import Targets, make


def test_zero_bandwidth_holds_the_reply(targets: Targets, via_proxy) -> None:
    with make("bandwidth", rate_kbps=0).on(targets):
        with pytest.raises(redis.exceptions.TimeoutError):
            via_proxy(timeout_s=0.5).ping()
    assert via_proxy().ping() is True


def test_negative_rate_is_refused_before_reaching_toxiproxy(targets: Targets) -> None:
    with pytest.raises(UsageError, match="non-negative"):
        make("bandwidth", rate_kbps=-1)
    assert targets.toxiproxy.toxics("redis") == []
