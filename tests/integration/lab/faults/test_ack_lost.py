import json

import pytest
import requests

from lab.faults import Targets, make
from lab.stack.native import NativeStack


def test_ack_lost_cuts_the_response_after_the_write_applied(
    targets: Targets, lab_stack: NativeStack, redis_direct
) -> None:
    sid = "ab" * 16
    assert make("ack_lost").window == "send"
    with make("ack_lost").on(targets):
        with pytest.raises(requests.exceptions.ConnectionError):
            requests.post(
                lab_stack.cfg.chat_url + "/chat",
                json={"message": "hi", "id": "acked-1"},
                cookies={"session_id": sid},
                timeout=30,
            )
    rows = [json.loads(x) for x in redis_direct.lrange(f"chat:{sid}", 0, -1)]
    assert [(r["id"], r["role"]) for r in rows] == [("acked-1", "user"), ("acked-1", "assistant")]
