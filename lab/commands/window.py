"""`lab window`: the window of vulnerability of one defect -- a sweep of one variable (the
refresh's delay after the answer, the tabs' gap, the conversation's age against its TTL, its
length), each value run on the defect alone and on the correct profile, trials added per point
until its 95 % interval is narrow enough (sequential, up to a cap).

Writes reports/window-<time>-<sweep>-s<seed>/: results.json (the points: value, k/n, Wilson
interval, replay lines), report.html (the curves with their bands, the window in words), and
prints the table of points.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from lab.commands.chaos import Progress
from lab.common.signals import deferred, exit_code
from lab.model.outcome import CellOutcome
from lab.model.window import Point, lost, window_edge, window_words
from lab.model.window import results as sweep_results
from lab.plan import shard, sweeps
from lab.plan.schedule import Cell, fault_text, plan_cell, profile_name
from lab.plan.sweeps import FIRST_TRIALS, MAX_TRIALS, MAX_WIDTH, Sweep  # one rule for both kinds of window
from lab.report.window import terminal, write
from lab.runner.runner import Runner
from lab.stack import Stack

EXIT_MEASURED, EXIT_CORRECT_LOST, EXIT_UNKNOWN = 0, 1, 3
ROLES = ("defect", "correct")


@dataclass
class WindowRun:
    stack: Stack
    sweep: Sweep
    defects: tuple[str, ...]
    values: tuple[int, ...]
    seed: int
    reports_root: Path
    fault: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    concurrency: int = 4
    first: int = FIRST_TRIALS
    max_trials: int = MAX_TRIALS
    max_width: float = MAX_WIDTH

    def cells(self) -> dict[tuple[str, int], Cell]:
        profiles = {"defect": self.defects, "correct": ()}
        return {
            (role, v): self.sweep.cell(profiles[role], v, self.fault, **self.params)
            for role in ROLES
            for v in self.values
        }

    def more(self, point: Point, tried: int) -> int:
        return sweeps.more_trials(tried, point.n, point.width, self.first, self.max_trials, self.max_width)

    def run(self, out: TextIO = sys.stdout) -> int:
        run_id = time.strftime("%Y%m%d-%H%M%S") + f"-{self.sweep.name}-s{self.seed}"
        out_dir = self.reports_root / f"window-{run_id}"
        cells = self.cells()
        points = {key: Point(key[1]) for key in cells}
        tried = dict.fromkeys(cells, 0)
        progress = Progress(len(cells) * self.first)
        runner = Runner(self.stack, out_dir, concurrency=self.concurrency, on_trial=progress.trial)
        by_id = {c.cell_id: key for key, c in cells.items()}
        t0, interrupted, round_no = time.monotonic(), None, 0
        try:
            while True:
                batch = []
                for key, cell in cells.items():
                    m = self.more(points[key], tried[key])
                    if m:
                        seed = shard.cell_seed(self.seed, cell, round_no)
                        batch.append((cell, plan_cell(cell, m, seed, prefix=f"r{round_no}-{key[0][0]}{key[1]}-")))
                        tried[key] += m
                if not batch:
                    break
                if round_no:
                    progress.total += sum(len(p) for _, p in batch)
                for o in runner.run(batch):
                    _count(points[by_id[o.cell.cell_id]], o)
                round_no += 1
        except KeyboardInterrupt as exc:  # SIGINT, SIGTERM or SIGHUP: what finished is reported
            interrupted = exc
            for o in runner.finished:
                _count(points[by_id[o.cell.cell_id]], o)
        finally:
            progress.close()
        with deferred():
            results = self.results(run_id, points, time.monotonic() - t0, interrupted is not None)
            write(out_dir, results)
            print(terminal(results, out_dir), file=out, flush=True)
        return exit_code(interrupted) if interrupted is not None else results["exit"]["code"]

    def results(self, run_id: str, points: dict[tuple[str, int], Point], seconds: float, interrupted: bool) -> dict:
        s = self.sweep
        curves = {role: [points[(role, v)] for v in self.values] for role in ROLES}
        window = {role: window_words(curves[role], s.unit, s.early, s.late, s.every) for role in ROLES}
        correct_lost = [p for p in curves["correct"] if p.k]
        unjudged = [f"{r} at {p.value}" for r in ROLES for p in curves[r] if not p.n]
        if correct_lost:
            code, why = EXIT_CORRECT_LOST, "the correct profile lost data: the window is not the defect's alone"
        elif unjudged:
            code, why = EXIT_UNKNOWN, "unknown: no trial could be judged for " + ", ".join(unjudged)
        else:
            code, why = EXIT_MEASURED, "measured"
        any_cell = next(iter(self.cells().values()))
        return sweep_results(
            run_id,
            s,
            self.seed,
            fault_text(any_cell.fault, {k: v for k, v in any_cell.params.items() if k != "span_pct"}),
            {"defect": profile_name(self.defects), "correct": "correct"},
            curves,
            window,
            window_edge(curves["defect"]),
            sum(p.n + p.unknown for c in curves.values() for p in c),
            seconds,
            interrupted,
            code,
            why,
            limits={"first": self.first, "max_trials": self.max_trials, "max_width": self.max_width},
        )


def _count(point: Point, o: CellOutcome) -> None:
    for t in o.trials:
        point.add(t.result, lost(t.result), t.replay_command(), t.trial.errors)
