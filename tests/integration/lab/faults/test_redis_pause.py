import pytest
import redis
import requests

from lab.faults import Targets, make
from lab.stack import Stack


def test_paused_redis_answers_nothing_and_the_backend_says_503(targets: Targets, lab_stack: Stack) -> None:
    with make("redis_pause").on(targets) as evidence:
        assert evidence == lab_stack.redis_paused()  # process state T / container State.Paused
        direct = redis.Redis.from_url(lab_stack.cfg.redis_url, socket_timeout=0.5, retry=None)
        with pytest.raises(redis.exceptions.TimeoutError):
            direct.ping()
        direct.close()
        # The correct profile times out (5 s socket timeout) and answers 503, not a hang.
        resp = requests.post(lab_stack.cfg.chat_url + "/chat", json={"message": "hi"}, timeout=60)
        assert resp.status_code == 503
    assert lab_stack.redis_paused() is None
    assert redis.Redis.from_url(lab_stack.cfg.redis_url, socket_timeout=5).ping()
