"""The built-in chat service as the runner's white-box client (lab.runner.client.Client): its page
driven in Chromium (driver, conversation), its backend's own events (the refresh's trigger,
quiescence, the preconditions), Redis's expiry events and commands, its store read directly
for the final read (the service's own layouts), and a failing trial's artifacts. All that the
lab knows of this service because it wrote it lives here, not in the runner."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import redis
from playwright.async_api import Browser

from lab.driver import artifacts, conversation, preconditions
from lab.driver.driver import ChatDriver
from lab.driver.observe import ExpiredKeys, RedisCommands
from lab.faults import Fault
from lab.model.history import Row, Trial
from lab.model.outcome import TrialOutcome
from lab.plan.schedule import TrialPlan
from lab.stack import Stack
from lab.stack.events import BackendEvents
from services.chat import session, store

if TYPE_CHECKING:
    from lab.driver.slots import Slot
    from lab.plan.lockstep import Lockstep

QUIESCENCE_TIMEOUT_S = 20.0
FINAL_READ_TRIES = 3
TRIAL_TIMEOUT_BASE_S = 60.0  # a trial's conversation may take at most base + per turn
TRIAL_TIMEOUT_PER_TURN_S = 15.0


class BuiltinClient:
    """One run's view of the built-in service; its observers are open only inside ``observed``."""

    heals_before_reading = False  # its final read is Redis's own, direct: a fault may stay on
    errors_make_unknown = True

    def __init__(self, stack: Stack, toxics: Callable[[], dict[str, Any]]) -> None:
        self.stack, self.toxics = stack, toxics
        self._observers: tuple[BackendEvents, ExpiredKeys, RedisCommands] | None = None

    @asynccontextmanager
    async def observed(self) -> AsyncIterator[None]:
        """The backend's events, Redis's expiry events and its commands, followed for the run."""
        events = BackendEvents(self.stack.backend_log)
        try:
            with ExpiredKeys(self.stack.cfg.redis_url) as expired, RedisCommands(self.stack.cfg.redis_url) as commands:
                self._observers = (events, expired, commands)
                try:
                    yield
                finally:
                    self._observers = None
        finally:
            events.close()

    @property
    def events(self) -> BackendEvents:
        return self._open()[0]

    def _open(self) -> tuple[BackendEvents, ExpiredKeys, RedisCommands]:
        if self._observers is None:
            raise RuntimeError("the built-in client is not observing: use it inside observed()")
        return self._observers

    def limit_s(self, plan: TrialPlan) -> float:
        return TRIAL_TIMEOUT_BASE_S + TRIAL_TIMEOUT_PER_TURN_S * plan.cell.turns

    def driver(self, browser: Browser, plan: TrialPlan, trace: bool) -> ChatDriver:
        return ChatDriver(
            browser, self.stack.cfg.chat_url, plan.headers, self.events, stream=plan.cell.stream, trace=trace
        )

    async def converse(
        self,
        plan: TrialPlan,
        d: ChatDriver,
        trial: Trial,
        step: "Lockstep | None",
        evidence: str | None,
        slot: "Slot",
        release: Callable[[], None],
    ) -> None:
        """The conversation, the refresh, and what the page shows after it (lab.driver.conversation).
        Its place is held to the end: what follows (its backend's events, a direct read) waits on nothing."""
        await conversation.run(plan, d, trial, step, evidence, slot, self.toxics)

    async def quiesce(self, d: ChatDriver, trial: Trial) -> None:
        """Until the backend has finished the trial's requests (its own events say so)."""
        ids = {s.id for s in trial.sends}
        events = self.events
        with d.timing("quiescence"):
            if not await events.wait_until(lambda: events.quiescent(ids), QUIESCENCE_TIMEOUT_S):
                trial.errors.append("the backend did not finish its requests (no quiescence)")

    def _read_store(self, sid: str) -> store.Stored:
        """The conversation as Redis holds it, read directly (the lab's own instrument, not the
        app's path): a timeout here is the machine's, so the read is tried FINAL_READ_TRIES times."""
        for attempt in range(1, FINAL_READ_TRIES + 1):
            r = redis.Redis.from_url(self.stack.cfg.redis_url, socket_timeout=5)
            try:
                return store.stored(r, sid)  # the service's own layouts (a list, a document)
            except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
                if attempt == FINAL_READ_TRIES:
                    raise
            finally:
                r.close()
        raise AssertionError("unreachable")

    async def final_read(self, d: ChatDriver, trial: Trial) -> tuple[str | None, dict[str, Any], float | None]:
        """The conversation as Redis holds it: (its session, the key's dump, when it was read)."""
        t_read = time.perf_counter()
        events, expired, _ = self._open()
        # The conversation's session: the one the backend logged for the trial's last send
        # (read from its events, not from the browser's cookies: no round trip per turn).
        sid = d.session_id = events.session_of([s.id for s in trial.sends]) or d.session_id
        dump: dict[str, Any] = {}
        read_at: float | None = None
        if sid is not None:
            key = session.key(sid)
            try:
                got = await asyncio.to_thread(self._read_store, sid)
                dump = {"key": got.key, "layout": got.layout, "pttl_ms": got.pttl_ms, "rows": got.raw}
                read_at = time.time()
                trial.final_rows = [Row(row.id, row.role) for row in got.rows]
            except (redis.exceptions.RedisError, ValueError) as exc:
                trial.errors.append(f"final read: {exc}")
            if dump.get("pttl_ms") == -2:
                # The key is gone: its "expired" event (if that is why) may still be in flight;
                # once a mark published now is back, every earlier event is in.
                await asyncio.to_thread(expired.sync, 1.0)
            trial.key_expired = key in expired.keys
        else:
            trial.errors.append(
                "no session to read: the backend logged no chat.received for the trial's sends"
                " and the page held no session cookie"
            )
        d.timing.add("final_read", time.perf_counter() - t_read)
        return sid, dump, read_at

    def preconditions(
        self, plan: TrialPlan, fault: Fault, trial: Trial, sid: str | None, read_at: float | None
    ) -> None:
        """Did the trial's experiment hold, by the backend's own events (lab.driver.preconditions)."""
        events, expired, _ = self._open()
        expired_at = expired.at.get(session.key(sid)) if sid else None
        preconditions.check(plan, fault, trial, events, expired_at, read_at)

    async def artifacts(
        self, folder: Path, outcome: TrialOutcome, d: ChatDriver, dump: dict[str, Any], shot: bytes | None
    ) -> Path:
        events, expired, commands = self._open()
        return await artifacts.write(folder, outcome, d, dump, shot, events, commands, expired)
