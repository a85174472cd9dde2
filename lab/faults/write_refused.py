"""write_refused: Redis refuses writes, unapplied, and serves reads -- as a primary demoted in a
failover answers READONLY. The lab asks its own Redis for a replica it does not have
(``min-replicas-to-write 1``): every write command, in or out of MULTI, in or out of a script,
is answered ``NOREPLICAS`` and changes nothing, while reads go on.

Where ``down`` fails the app's reads first (its handler then answers an error before any write,
or hangs on a read that never returns), this fault reaches the write's own error path: an app
that answers success for a write Redis refused has swallowed the error -- logged it, or lost it
in a task nobody awaits.

``at = "send"`` (the default): every write of one send refused. ``at = "write"`` (lab
investigate): only the send's first refused write -- the trial serves writes again the moment
Redis has counted one refusal (``INFO errorstats``), so a question's write can fail while its
reply's, made after the model has answered, lands (``refused``, ``refuse``). ``at = "answer"``
(lab investigate): the first write once the send's answer has begun (its body's first bytes,
or the reply's first frame, reached the browser; the trial switches the refusal on then) -- a
reply stored as or after it streams. ``at = "later"`` (lab investigate): the first write once the
store's record shows the send's first change of the conversation's key -- the reply's write,
where the question is stored first: an app whose answer waits on something else on the same
connection (a session's save) acknowledges only after that write was sent, so no timing shows
it left to a promise nobody awaits; its failure does. Either way the refusals are counted: a
send none of whose writes was refused tested nothing."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

import redis

from lab.common.errors import UsageError
from lab.faults.base import Fault, FaultNotConfirmed, Targets, register
from lab.stack.native_faults import REFUSING

AT = ("send", "write", "answer", "later")
SWITCHED = ("answer", "later")  # switched on by the trial, mid-send
MOMENT = {"answer": " after its answer began", "later": " after it first changed the key"}  # when, said
SETTING = REFUSING  # the stacks' heal sets it back to 0 whatever a killed run left


@register("write_refused")
@dataclass
class WriteRefused(Fault):
    summary = "Redis refuses writes (NOREPLICAS), unapplied, and serves reads: one send, or its first write"
    window = "send"
    # The lab's own Redis only: a setting left on by a killed run must never refuse the writes of
    # a Redis someone else uses (an external stack's, an app's own behind `lab proxy`).
    modes = ("native", "compose")
    instead = "down (the redis proxy refuses connections)"
    at: str = "send"
    refusing = False  # whether writes are refused now (not a parameter: unannotated)

    @property
    def solo(self) -> bool:  # type: ignore[override]
        """Its trials one at a time: one trial's refusal is every trial's (one Redis)."""
        return self.at != "send"

    @property
    def inside_reply(self) -> bool:  # type: ignore[override]
        return self.at == "answer"

    def check(self) -> None:
        if self.at not in AT:
            raise UsageError(
                f"write_refused: at={self.at!r} is not one of {', '.join(AT)}",
                "at=send (every write of one send), at=write (its first write), at=answer (its first "
                "write once the answer has begun) or at=later (its first write after its first change of "
                "the conversation's key): the last three lab investigate's",
            )

    def _redis(self, t: Targets) -> Any:
        r: Any = getattr(self, "_r", None)
        if r is None:
            r = self._r = redis.Redis.from_url(t.stack.cfg.redis_url, socket_timeout=5)
        return r

    def refused(self, t: Targets) -> int:
        """Writes Redis has refused since the fault was applied."""
        stats = self._redis(t).info("errorstats")
        return int(stats.get("errorstat_NOREPLICAS", {}).get("count", 0)) - getattr(self, "_base", 0)

    def refused_commands(self, t: Targets) -> dict[str, int]:
        """The commands refused since the fault was applied, by name (``INFO commandstats``'s
        rejected calls): which of the app's writes met the refusal."""
        now = _rejected(self._redis(t))
        base = getattr(self, "_rejected", {})
        return {c: n - base.get(c, 0) for c, n in sorted(now.items()) if n > base.get(c, 0)}

    def refuse(self, t: Targets, on: bool) -> None:
        """Writes refused (True) or served again (False)."""
        try:
            self._redis(t).config_set(SETTING, 1 if on else 0)
            self.refusing = on
        except redis.RedisError as exc:  # CONFIG renamed or denied (a managed Redis): nothing to refuse with
            raise FaultNotConfirmed(f"CONFIG SET {SETTING} refused by this Redis: {exc}") from None

    def apply(self, t: Targets) -> None:
        self._base = 0
        self._base = self.refused(t)
        self._rejected = _rejected(self._redis(t))
        self.refusing = False
        if self.at not in SWITCHED:  # those are switched on by the trial (the answer begun, a first write)
            self.refuse(t, True)

    def remove(self, t: Targets) -> None:
        r = getattr(self, "_r", None)
        if r is not None:
            try:
                self.refuse(t, False)
            finally:
                r.close()
                del self._r

    def confirm(self, t: Targets) -> str:
        r = self._redis(t)
        replicas = int(r.info("replication").get("connected_slaves", 0))
        setting = r.config_get(SETTING).get(SETTING)
        if replicas or setting != ("0" if self.at in SWITCHED else "1"):
            raise FaultNotConfirmed(f"{SETTING} is {setting} with {replicas} replicas: writes are not refused as asked")
        which = {"send": "every write of the send", "write": "the send's first write"}
        if self.at in SWITCHED:
            once = "the answer has begun" if self.at == "answer" else "the send first changed the conversation's key"
            return f"no replica: {SETTING} 1 once {once}, its next write answered NOREPLICAS, unapplied; reads served"
        return f"{SETTING} 1 with no replica: {which[self.at]} answered NOREPLICAS, unapplied; reads served"


def _rejected(r: Any) -> dict[str, int]:
    stats = r.info("commandstats")
    return {k.removeprefix("cmdstat_").upper(): int(v.get("rejected_calls", 0)) for k, v in stats.items()}


FIRST_REFUSAL_POLL_S = 0.002  # lab investigate's own poll (lab.investigate.run.mid_write.REFUSE_POLL_S)


def for_a_test(f: Fault, t: Targets) -> AbstractContextManager[None]:
    """What a fault applied by a test (the pytest plugin's ``inject``, ``@pytest.mark.fault``)
    needs beside its own on/off: write_refused at=write serves writes again after its first
    refusal, as lab investigate's trial does -- applied alone it refused every write until the
    test's end. at=answer and at=later are refused: only lab investigate's trial sees those
    moments, and applied by a test nothing would switch the refusal on (confirmed, never acting)."""
    if not isinstance(f, WriteRefused) or f.at == "send":
        return nullcontext()
    if f.at in SWITCHED:
        raise UsageError(
            f"write_refused: at={f.at!r} is switched on by lab investigate's trial, not by a test",
            "at=write (the first write after the fault is applied) or at=send (every write until it is removed)",
        )
    return _first_refusal_only(f, t)


@contextmanager
def _first_refusal_only(f: WriteRefused, t: Targets) -> Iterator[None]:
    """Writes served again the moment Redis has counted one refusal (INFO errorstats, polled
    every FIRST_REFUSAL_POLL_S by a thread while the block runs)."""
    stop = threading.Event()

    def watch() -> None:
        try:
            while not stop.wait(FIRST_REFUSAL_POLL_S):
                if f.refused(t) > 0:
                    f.refuse(t, False)
                    return
        except (redis.RedisError, FaultNotConfirmed):  # Redis gone under the test: the removal says so
            return

    watcher = threading.Thread(target=watch, name="write_refused-first", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        watcher.join(10)
