"""`lab window --target SPEC`: the window of an app the lab did not write, swept by one of:
- refresh_delay_ms: its after_ack refresh delayed by each value, under the investigation's
  fault (by default the same 300 ms of latency as its after_ack experiment: a write made after
  the answer then takes round trips to land). Two curves: the stale read (the page after the
  refresh lacks a turn the settled read has) and the loss (the settled read lacks an
  acknowledged turn).
- tab_gap_ms: two_tabs' second tab sending each value after the first (100 ms of latency, as the
  investigation's two_tabs experiment): the loss curve of a lost update.
- turns: the conversation's length, no fault: the loss curve of a capped history.
Same target start-up, contract check and checker as `lab investigate`."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from lab.common.signals import exit_code
from lab.investigate.run.blackbox import Prober
from lab.investigate.run.experiments import Experiment
from lab.investigate.run.investigation import Investigation
from lab.investigate.run.experiments import TrialId
from lab.model.outcome import TrialOutcome
from lab.model.window import Point, lost, window_edge, window_words
from lab.model.window import results as sweep_results
from lab.plan.schedule import fault_text
from lab.plan import sweeps
from lab.plan.sweeps import FIRST_TRIALS, MAX_TRIALS, MAX_WIDTH, Sweep
from lab.common.config import script
from lab.report import EXIT_CLEAN, EXIT_INCONCLUSIVE
from lab.report.window import terminal, write

KINDS = {"stale": "stale read (the page after the refresh)", "lost": "lost (the settled read)"}
# The sweeps an app's window is measured by, and the experiment's field each one varies.
TARGET_SWEEPS = {"refresh_delay_ms": "delay_ms", "tab_gap_ms": "gap_ms", "turns": "turns"}


def _as_kind(words: str, kind: str) -> str:
    """The sweep's words are of loss; a stale read shows the turn missing, then has it."""
    if kind == "lost":
        return words
    words = words.replace("loses the turn", "shows the turn missing").replace("(lost at", "(seen at")
    return words.replace("no loss at", "no stale read at")


@dataclass
class TargetWindow(Investigation):
    sweep: Sweep | None = None
    values: tuple[int, ...] = ()
    first: int = FIRST_TRIALS
    max_trials: int = MAX_TRIALS
    max_width: float = MAX_WIDTH
    kind = "window"

    @property
    def kinds(self) -> dict[str, str]:
        """The curves: a stale read only where the refresh is what varies."""
        assert self.sweep is not None
        return KINDS if self.sweep.name == "refresh_delay_ms" else {"lost": KINDS["lost"]}

    def value(self, exp: Experiment) -> int:
        assert self.sweep is not None
        return int(getattr(exp, TARGET_SWEEPS[self.sweep.name]))

    def points(self, done: list[TrialOutcome]) -> dict[str, dict[int, Point]]:
        by_no = {no: self.value(exp) for no, exp in self.plan}
        out = {kind: {v: Point(v) for v in self.values} for kind in self.kinds}
        for o in done:
            value = by_no[TrialId.parse(o.trial.trial_id).no]
            why = [o.trial.unknown] if o.trial.unknown else []
            if "stale" in out:
                out["stale"][value].add(o.result, bool(o.result.stale), self.point_replay(value), why)
            out["lost"][value].add(o.result, lost(o.result), self.point_replay(value), why)
        return out

    def more(self, done: list[TrialOutcome], no: int, tried: int) -> int:
        if tried == 0:  # the first round: no points to compute yet
            return self.first
        value = self.value(dict(self.plan)[no])
        pts = [kind[value] for kind in self.points(done).values()]
        wide, judged = max(p.width for p in pts), min(p.n for p in pts)
        return sweeps.more_trials(tried, judged, wide, self.first, self.max_trials, self.max_width)

    async def _trials(self, prober: Prober, done: list[TrialOutcome]) -> None:
        """Round after round until every value's interval is narrow enough (sweeps.more_trials)."""
        tried = dict.fromkeys(dict(self.plan), 0)
        while todo := [(no, e, m) for no, e in self.plan if (m := self.more(done, no, tried[no]))]:
            for no, exp, m in todo:  # under a fault each value has the Redis link to itself
                await self._experiment(prober, no, exp, done, start=tried[no], count=m)
                tried[no] += m

    def point_replay(self, value: int) -> str:
        """A point again (a trial's seed alone does not rebuild a swept experiment)."""
        assert self.sweep is not None
        sets = [x for s in self.sets for x in ("--set", s)]
        exp = self.plan[0][1]
        fault = fault_text(exp.fault, dict(exp.params))
        return shlex.join(
            [script(), "window", "--target", str(self.spec.file), *sets, "--vary", self.sweep.name]
            + ["--values", str(value), "--fault", fault, "--seed", str(self.seed), "--max-trials", "5"]
        )

    def _report(
        self, done: list[TrialOutcome], out_dir: Path, seconds: float, interrupted: BaseException | None
    ) -> int:
        assert self.sweep is not None
        s, pts = self.sweep, self.points(done)
        curves = {kind: [pts[kind][v] for v in self.values] for kind in self.kinds}
        window = {
            kind: _as_kind(window_words(curves[kind], s.unit, s.early, s.late, s.every), kind) for kind in self.kinds
        }
        edge = next((e for e in (window_edge(c) for c in curves.values()) if e), None)
        unjudged = [str(p.value) for p in curves["lost"] if not p.n]
        exp = self.plan[0][1]
        results = sweep_results(
            out_dir.name,
            s,
            self.seed,
            fault_text(exp.fault, dict(exp.params)),
            dict(self.kinds),
            curves,
            window,
            edge,
            len(done),
            seconds,
            interrupted is not None,
            EXIT_INCONCLUSIVE if unjudged else EXIT_CLEAN,
            f"unknown: no trial could be judged at {', '.join(unjudged)}" if unjudged else "measured",
            target=self.spec.name,
        )
        write(out_dir, results)
        self.say(terminal(results, out_dir))
        return exit_code(interrupted) if interrupted is not None else int(results["exit"]["code"])
