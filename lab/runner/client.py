"""What the runner asks of the system under test, one trial at a time: the client it drives. The
runner owns the loop (fault groups, lockstep, deadlines, the browser and its pooled contexts, the
stand-in's record, the checker, on_trial); a client owns what is particular to its system --
how a conversation is had with it, when it is done, how its store is read, what a failing trial
keeps. The built-in service's client is lab.driver.builtin.BuiltinClient (white box: its
backend's events and its store)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from playwright.async_api import Browser

from lab.common.phases import Phases
from lab.faults import Fault
from lab.model.history import Send, Trial
from lab.model.outcome import TrialOutcome
from lab.plan.schedule import TrialPlan

if TYPE_CHECKING:
    from lab.driver.slots import Slot
    from lab.plan.lockstep import Lockstep


class TrialPage(Protocol):
    """One trial's page as the runner sees it: where its time went, the step it is at (named if
    the trial times out), its sends, and its browser artifacts."""

    timing: Phases
    sends: list[Send]
    trace: bool

    @property
    def phase(self) -> str: ...

    async def screenshot(self) -> bytes | None: ...

    async def close(self, trace_dir: Path | None = None) -> None: ...


P = TypeVar("P", bound=TrialPage)


class Client(Protocol[P]):
    # A client whose trials read the system through the faulted link once the conversation is
    # over (a black box: its settled read goes through the app): a fault in place for the whole
    # trial is armed around each group's conversations (lockstep) and healed before they read,
    # not held on for the group's trials.
    heals_before_reading: bool
    # What its trials record in ``Trial.errors`` voids them (unknown); a black box's errors are
    # notes on a claim its trial does not make (a stale read not tested), not on the trial.
    errors_make_unknown: bool

    def limit_s(self, plan: TrialPlan) -> float:
        """The most a trial's conversation may take (a hung step makes it unknown, not the run hang)."""
        ...

    def observed(self) -> AbstractAsyncContextManager[None]:
        """The client's observers, open for the whole run."""
        ...

    def driver(self, browser: Browser, plan: TrialPlan, trace: bool) -> P: ...

    async def converse(
        self,
        plan: TrialPlan,
        d: P,
        trial: Trial,
        step: "Lockstep | None",
        evidence: str | None,
        slot: "Slot",
        release: Callable[[], None],
    ) -> None:
        """The trial's conversation, its refresh and what the page shows after it, into ``trial``.
        ``release``: to call once what is left only waits on the system (a black box's settled
        read), so the next trial of a pooled group may start; the trial keeps ``slot``."""
        ...

    async def quiesce(self, d: P, trial: Trial) -> None:
        """Until the system has finished the trial's requests (an error on ``trial`` if never)."""
        ...

    async def final_read(self, d: P, trial: Trial) -> tuple[str | None, dict[str, Any], float | None]:
        """The conversation as the store holds it, into ``trial``: (its key's id, a dump, when read)."""
        ...

    def preconditions(
        self, plan: TrialPlan, fault: Fault, trial: Trial, sid: str | None, read_at: float | None
    ) -> None:
        """Record on ``trial`` what of its experiment did not hold."""
        ...

    async def artifacts(
        self, folder: Path, outcome: TrialOutcome, d: P, dump: dict[str, Any], shot: bytes | None
    ) -> Path:
        """A failing trial's folder."""
        ...
