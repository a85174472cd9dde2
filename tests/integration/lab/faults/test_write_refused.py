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


def test_at_write_applied_by_a_test_refuses_its_first_write_only(
    targets: Targets, via_proxy: Callable[..., "redis.Redis[bytes]"]
) -> None:
    """As the pytest plugin applies it (inject, @pytest.mark.fault): the first write refused,
    then writes served again by the watcher -- before it, the refusal held until the test's end."""
    from lab.common.wait import wait_until
    from lab.faults.write_refused import for_a_test

    app = via_proxy()
    app.delete("wr:t")
    fault = make("write_refused", at="write")
    assert isinstance(fault, WriteRefused)
    beside = for_a_test(fault, targets)
    with fault.on(targets), beside:
        with pytest.raises(redis.ResponseError, match="NOREPLICAS"):
            app.rpush("wr:t", "the message")
        wait_until(lambda: not fault.refusing or None, what="writes served again", timeout_s=5)
        app.rpush("wr:t", "the reply")
        assert fault.refused(targets) == 1
    assert app.lrange("wr:t", 0, -1) == [b"the reply"]


def test_a_moment_only_lab_investigate_sees_is_refused_to_a_test(targets: Targets) -> None:
    """at=answer / at=later applied by a test: nothing would switch the refusal on, yet it would
    be confirmed -- refused, naming the two a test can use; at=send needs nothing beside it."""
    from lab.faults.write_refused import for_a_test

    for at in ("answer", "later"):
        with pytest.raises(UsageError, match=f"at='{at}'.*not by a test"):
            for_a_test(make("write_refused", at=at), targets)
    with for_a_test(make("write_refused"), targets), for_a_test(make("latency", latency_ms=10), targets):
        pass
