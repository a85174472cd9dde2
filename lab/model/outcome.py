"""A trial's and a cell's outcome: the trial model, the checker's result and where they came
from. Plain data (no Playwright), shared by the runner, attribution, reports and lab investigate."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lab.model.checker import Result
from lab.model.history import Trial
from lab.plan.schedule import Cell, TrialPlan


@dataclass
class TrialOutcome:
    plan: TrialPlan | None  # None: a black-box trial (lab investigate has no plan)
    trial: Trial
    result: Result
    artifacts: Path | None = None
    seconds: float = 0.0
    mode: str = "native"  # the stack's mode: a replay command must name it
    model: bool = False  # the replies came from the stand-in model (lab chaos --model)
    replay: str = ""  # a black-box trial's replay command (a planned one derives it)
    phases: dict[str, float] = field(default_factory=dict)  # seconds per phase (lab.common.phases)

    @property
    def trial_id(self) -> str:
        return self.trial.trial_id

    @property
    def failed(self) -> bool:
        return self.result.validity == "invalid"

    def replay_command(self) -> str:
        return self.plan.replay_command(mode=self.mode, model=self.model) if self.plan is not None else self.replay


@dataclass
class CellOutcome:
    cell: Cell
    trials: list[TrialOutcome] = field(default_factory=list)
    fault_evidence: str | None = None
    fault_error: str | None = None
    # Trials left unknown for an honest reason (a precondition that did not hold) and replaced
    # by new trials (lab.expect): kept for the record, judged for nothing.
    replaced: list[TrialOutcome] = field(default_factory=list)
