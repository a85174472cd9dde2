import pytest
import redis

from lab.faults import Targets, make


@pytest.mark.parametrize("stream", ["downstream", "upstream"])
def test_drop_resets_the_next_connection(targets: Targets, via_proxy, stream: str) -> None:
    with make("drop", stream=stream).on(targets):
        with pytest.raises(redis.exceptions.ConnectionError):
            via_proxy().ping()
    assert via_proxy().ping() is True


def test_one_shot_drop_is_armed_for_one_send_only() -> None:
    assert make("drop").window == "send"
    assert make("drop", one_shot=False).window == "trial"
