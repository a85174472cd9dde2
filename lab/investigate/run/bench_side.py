"""`lab bench`'s investigate side of its like-with-like measure (lab.commands.bench_like): one
experiment of `lab investigate` on a spec, its trials kept instead of reported, and the time
its browser session took (browser start and the trials; its contract check, once per run, is
timed apart)."""

from __future__ import annotations

import io
import time
from dataclasses import dataclass
from pathlib import Path

from lab.common.config import LabConfig
from lab.faults.base import Targets
from lab.investigate.run.experiments import Experiment
from lab.investigate.run.investigation import Investigation
from lab.investigate.spec import parse as spec_mod
from lab.model.outcome import TrialOutcome
from lab.plan.schedule import Cell


@dataclass
class _Kept(Investigation):
    """An investigation that keeps its trials instead of reporting them."""

    browse_s: float = 0.0
    kept: tuple[TrialOutcome, ...] = ()

    async def _browse(self, targets: Targets, done: list[TrialOutcome]) -> None:
        t0 = time.monotonic()
        try:
            await super()._browse(targets, done)
        finally:
            self.browse_s = time.monotonic() - t0

    def _report(
        self, done: list[TrialOutcome], out_dir: Path, seconds: float, interrupted: BaseException | None
    ) -> int:
        if interrupted is not None:
            raise interrupted  # a Ctrl-C ends the bench, not only this side
        self.kept = tuple(done)
        return 0


def run_cell(
    spec_file: Path, cell: Cell, cfg: LabConfig, trials: int, concurrency: int, seed: int, out: Path
) -> tuple[list[TrialOutcome], float, float]:
    """``cell``'s experiment (fault, refresh point, turns) run on the spec's app: its trials, the
    seconds of its browser session less its contract check, and the contract check's."""
    exp = Experiment(cell.fault, cell.fault_params, cell.refresh, cell.turns, "lab bench: like with like")
    inv = _Kept(spec_mod.load(spec_file), cfg, [(0, exp)], trials, out, seed, cell.turns, concurrency=concurrency)
    inv.out = io.StringIO()  # the bench prints its own lines
    inv.run()
    return list(inv.kept), inv.browse_s - inv.contract_s, inv.contract_s
