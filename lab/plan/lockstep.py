"""One-send faults shared by a group of trials: armed once, around the same turn of each.

A toxic acts on a whole proxy, so trials cannot each have their own one-send fault: they arrive
at the fault turn together (a barrier), the fault is applied and confirmed once, every trial
sends, and the fault is healed once all of them have settled that turn."""

from __future__ import annotations

import asyncio
from contextlib import ExitStack
from typing import Any

from lab.common.errors import LabError
from lab.faults import Fault, Targets


class Lockstep:
    """Arms a one-send fault once for a group of trials: every trial arrives at the fault turn,
    the fault is applied and confirmed, every trial sends, and the fault is healed once all of
    them have settled that turn."""

    def __init__(self, parties: int, fault: Fault, targets: Targets) -> None:
        self.fault, self.targets = fault, targets
        self.barrier = asyncio.Barrier(parties)
        self.armed: ExitStack | None = None  # the fault while it is on
        self.evidence: str | None = None
        self.error: str | None = None
        self.toxics: dict[str, Any] = {}
        self._late: asyncio.Future[None] | None = None  # a fault applied after its onset
        self._released = asyncio.Event()

    async def __aenter__(self) -> "Lockstep":
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release()

    def release(self) -> None:
        """The group is over (finished, failed or cancelled by a signal): the fault, if still
        armed, is removed now -- never left to a generator's finalizer at exit."""
        armed, self.armed = self.armed, None
        if armed is not None:
            try:
                armed.close()
            except LabError:
                pass  # the stack is already gone; the run's own heal resets the proxies

    def abandon(self) -> None:
        """A trial of the group timed out: release the others (they see a broken barrier)."""
        self.error = self.error or "a trial of the group timed out"
        # Kept: a task nothing references may be collected before it runs (RUF006).
        self._aborting = asyncio.ensure_future(self.barrier.abort())

    async def arm(self, onset_s: float = 0.0) -> bool:
        """Every trial at the fault turn, then the fault on before any sends -- or, with
        ``onset_s`` (lab window's fault_onset_ms), the sends at once and the fault ``onset_s``
        after them (its confirmation then comes with ``onset``)."""
        try:
            if not onset_s:
                return await self._arm()
            if self._late is None:  # the first to arrive: every party waits on this one future
                self._late = asyncio.ensure_future(self._apply_after(onset_s))
            if await self.barrier.wait() == 0:
                self._released.set()
            return True
        except asyncio.BrokenBarrierError:
            if self._late is not None:
                self._late.cancel()
            return False

    async def onset(self) -> bool:
        """A late fault: applied (and confirmed) by now? Waits for its onset to pass."""
        if self._late is not None:
            await asyncio.wait([self._late])  # (never raises: a cancelled onset applied nothing)
        return self.armed is not None

    async def _apply_after(self, onset_s: float) -> None:
        await self._released.wait()  # every trial of the group released: their sends begin
        await asyncio.sleep(onset_s)  # the onset is the variable being swept
        self._apply()

    def _apply(self) -> None:
        armed = ExitStack()
        try:
            self.evidence = armed.enter_context(self.fault.on(self.targets))
            self.toxics = self.targets.toxiproxy.snapshot()
            self.armed = armed
        except LabError as exc:
            armed.close()
            self.error = str(exc)

    async def heal(self) -> None:
        try:
            if self._late is not None:
                await asyncio.wait([self._late])  # never heal before a late fault is on
            await self._heal()
        except asyncio.BrokenBarrierError:
            armed, self.armed = self.armed, None
            if armed is not None:
                armed.close()

    async def _arm(self) -> bool:
        if await self.barrier.wait() == 0:
            self._apply()
        await self.barrier.wait()
        return self.armed is not None

    async def _heal(self) -> None:
        if await self.barrier.wait() == 0:
            armed, self.armed = self.armed, None
            if armed is not None:
                armed.close()
        await self.barrier.wait()
