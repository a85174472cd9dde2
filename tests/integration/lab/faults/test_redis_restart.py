import pytest
import redis

from lab.faults import Targets, make
from lab.stack import Stack


@pytest.mark.parametrize("durable, survives", [(False, False), (True, True)], ids=["no-persistence", "aof-always"])
def test_restart_loses_data_only_without_persistence(
    targets: Targets, lab_stack: Stack, durable: bool, survives: bool
) -> None:
    r = redis.Redis.from_url(lab_stack.cfg.redis_url, socket_timeout=5)
    r.rpush("lab:restart", "kept?")
    before = lab_stack.instance("redis")  # a pid natively, a container start time on compose
    with make("redis_restart", durable=durable).on(targets) as evidence:
        assert "restarted" in evidence
    assert lab_stack.instance("redis") != before
    assert (r.lrange("lab:restart", 0, -1) == [b"kept?"]) is survives
    r.delete("lab:restart")
    r.close()
