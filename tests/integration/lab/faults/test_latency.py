import time

import pytest

from lab.faults import FaultNotConfirmed, Targets, make


def test_latency_slows_each_round_trip_and_goes_away(targets: Targets, via_proxy) -> None:
    fault = make("latency", latency_ms=250)
    with fault.on(targets) as evidence:
        assert "PING through the proxy took" in evidence
        r = via_proxy()
        r.ping()
        t0 = time.monotonic()
        r.ping()
        assert (time.monotonic() - t0) * 1000 >= 250
        assert len(targets.toxiproxy.toxics("redis")) == 1
    assert targets.toxiproxy.toxics("redis") == []


def test_a_latency_listed_but_not_slowing_the_link_is_not_confirmed(targets: Targets) -> None:
    """The confirmation times a round trip, not the toxic's listing: a toxic listed with the
    fault's attributes that acts on no connection (toxicity 0) is refused -- and its PING,
    with no handshake before it, is the only round trip the fault would have delayed."""
    fault = make("latency", latency_ms=250)
    fault.apply(targets)
    try:
        assert "PING through the proxy took" in fault.confirm(targets)
        targets.toxiproxy.update_toxic("redis", fault._toxic_name, toxicity=0.0)
        with pytest.raises(FaultNotConfirmed, match="a PING took"):
            fault.confirm(targets)
    finally:
        fault.remove(targets)
    assert targets.toxiproxy.toxics("redis") == []
