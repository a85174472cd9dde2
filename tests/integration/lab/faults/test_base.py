"""The contract every fault gets from lab/faults/base.py."""

from dataclasses import dataclass

import pytest

from lab.common.errors import UsageError
from lab.faults import REGISTRY, FaultNotConfirmed, Targets, make
from lab.faults.latency import Latency


def test_every_fault_module_is_registered() -> None:
    assert sorted(REGISTRY) == sorted(
        [
            "none",
            "latency",
            "drop",
            "blackhole",
            "down",
            "bandwidth",
            "slicer",
            "slow_close",
            "ttl_elapse",
            "redis_pause",
            "redis_restart",
            "backend_restart",
            "ack_lost",
            "redis_net_disconnect",
            "model_error",
            "model_cut",
            "model_stall",
            "write_refused",
        ]
    )


@pytest.mark.parametrize(
    "name, params, fragment",
    [
        ("nope", {}, "valid faults: ack_lost"),
        ("latency", {"latencyms": 5}, "its parameters: latency_ms, jitter_ms, stream, proxy"),
        ("latency", {"latency_ms": "5"}, "must be an integer"),
        ("drop", {"stream": "sideways"}, "valid: upstream, downstream"),
        ("drop", {"one_shot": "yes"}, "must be true or false"),
    ],
)
def test_bad_fault_input_names_the_valid_values(name: str, params: dict, fragment: str) -> None:
    with pytest.raises(UsageError) as err:
        make(name, **params)
    assert fragment in str(err.value)


@dataclass
class _UnconfirmableLatency(Latency):
    """A latency whose confirmation always fails: the only way to force a half-applied fault
    deterministically (the toxic is really added; only the check is made to fail)."""

    def confirm(self, t: Targets) -> str:
        raise FaultNotConfirmed("forced for the test")


def test_a_half_applied_fault_is_undone(targets: Targets) -> None:
    with pytest.raises(FaultNotConfirmed):
        with _UnconfirmableLatency(latency_ms=10).on(targets):
            pytest.fail("the body must not run when confirmation fails")
    assert targets.toxiproxy.toxics("redis") == []


def test_the_fault_is_removed_when_the_body_raises(targets: Targets) -> None:
    with pytest.raises(RuntimeError):
        with make("latency", latency_ms=10).on(targets):
            raise RuntimeError("test body failed")
    assert targets.toxiproxy.toxics("redis") == []
