import pytest
import requests

from lab.common.errors import UsageError
from lab.faults import Targets, make
from lab.stack.native import NativeStack


def test_ttl_elapse_gives_requests_a_short_ttl(targets: Targets, lab_stack: NativeStack, redis_direct) -> None:
    fault = make("ttl_elapse", ttl_ms=1500)
    assert fault.min_gap_ms < 1500 // 2 and fault.min_duration_ms() > 2 * 1500
    with fault.on(targets) as evidence:
        assert "lab mode" in evidence
        resp = requests.post(
            lab_stack.cfg.chat_url + "/chat", json={"message": "hi"}, headers=fault.headers(), timeout=30
        )
        sid = resp.json()["session_id"]
        assert 0 < redis_direct.pttl(f"chat:{sid}") <= 1500


def test_ttl_out_of_range_is_refused() -> None:
    with pytest.raises(UsageError, match="out of range"):
        make("ttl_elapse", ttl_ms=5)
