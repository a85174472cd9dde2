import time

import pytest

from lab.common.errors import UsageError
from lab.faults import Targets, make


def test_slicer_delivers_a_reply_in_delayed_slices(targets: Targets, via_proxy) -> None:
    r = via_proxy()
    r.set("lab:slicer", "x" * 100)
    with make("slicer", average_size=10, delay_us=20_000).on(targets):
        t0 = time.monotonic()
        assert r.get("lab:slicer") == b"x" * 100
        # ~107 bytes of reply in 10-byte slices, 20 ms apart: at least 10 gaps.
        assert (time.monotonic() - t0) * 1000 >= 10 * 20
    r.delete("lab:slicer")


def test_zero_slices_are_refused(targets: Targets) -> None:
    with pytest.raises(UsageError, match="crashes toxiproxy"):
        make("slicer", average_size=0, size_variation=0)
    assert targets.toxiproxy.toxics("redis") == []
