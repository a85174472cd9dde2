import time

from lab.faults import Targets, make


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
