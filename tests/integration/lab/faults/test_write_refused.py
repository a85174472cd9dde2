"""write_refused on the real redis-server: writes answered NOREPLICAS and unapplied (alone, in
MULTI, in a script), reads served, every refusal counted with its command; writes served again
once removed -- and after a refusal when the trial says so (at=write)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import redis

from lab.common.errors import UsageError
from lab.commands.chaos import check_not_probe_only
from lab.faults import Targets, make
from lab.faults.write_refused import SETTING, WriteRefused


def test_writes_are_refused_unapplied_and_reads_served_until_removed(
    targets: Targets, via_proxy: Callable[..., "redis.Redis[bytes]"]
) -> None:
    app = via_proxy()
    app.delete("wr:k")
    app.rpush("wr:k", "before")
    fault = make("write_refused")
    assert isinstance(fault, WriteRefused)
    with fault.on(targets) as evidence:
        assert "NOREPLICAS" in evidence and "reads served" in evidence
        with pytest.raises(redis.ResponseError, match="NOREPLICAS"):
            app.rpush("wr:k", "alone")
        with pytest.raises(redis.ResponseError):
            app.pipeline(transaction=True).rpush("wr:k", "in multi").expire("wr:k", 60).execute()
        with pytest.raises(redis.ResponseError, match="NOREPLICAS"):
            app.eval("return redis.call('rpush', KEYS[1], 'scripted')", 1, "wr:k")
        assert app.lrange("wr:k", 0, -1) == [b"before"]  # read, and nothing applied
        assert fault.refused(targets) >= 3
        assert {"RPUSH", "EXPIRE"} <= set(fault.refused_commands(targets))
        fault.refuse(targets, False)  # at=write: served again once the trial has seen a refusal
        app.rpush("wr:k", "after")
    app.rpush("wr:k", "removed")
    assert app.lrange("wr:k", 0, -1) == [b"before", b"after", b"removed"]
    direct = redis.Redis.from_url(targets.stack.cfg.redis_url)
    assert direct.config_get(SETTING)[SETTING] == "0"  # nothing left behind
    direct.close()


def test_bad_at_names_the_valid_ones() -> None:
    with pytest.raises(UsageError, match="at='first'"):
        make("write_refused", at="first")
    assert make("write_refused", at="write").solo and not make("write_refused").solo
    # Only at=answer's moment is inside the reply: the stand-in paces those replies alone.
    assert make("write_refused", at="answer").inside_reply
    assert not make("write_refused", at="write").inside_reply and not make("drop").inside_reply
    for at in ("answer", "later"):
        with pytest.raises(UsageError, match="lab investigate.s"):
            check_not_probe_only({"at": at})
    assert make("write_refused", at="later").solo and not make("write_refused", at="later").inside_reply


@pytest.mark.parametrize("at, moment", [("answer", "once the answer has begun"), ("later", "once the send first")])
def test_a_switched_moment_serves_writes_until_the_trial_switches_the_refusal_on(
    targets: Targets, via_proxy: Callable[..., "redis.Redis[bytes]"], at: str, moment: str
) -> None:
    """at=answer, at=later: applied and confirmed with writes still served; refused once the
    trial says the answer has begun (the send first changed its key), counted from then."""
    app = via_proxy()
    fault = make("write_refused", at=at)
    assert isinstance(fault, WriteRefused) and fault.solo
    with fault.on(targets) as evidence:
        assert moment in evidence
        app.set("wr:a", "served")  # before the answer: the question's write lands
        assert fault.refused(targets) == 0 and not fault.refusing
        fault.refuse(targets, True)
        with pytest.raises(redis.ResponseError, match="NOREPLICAS"):
            app.set("wr:a", "refused")
        assert fault.refused(targets) == 1 and fault.refused_commands(targets) == {"SET": 1}
    assert app.get("wr:a") == b"served"
