"""`lab bench`: the lab's runner against the plain Playwright loop, on the same stack, in one go.

The plain loop is tests/bench/plain/test_plain_loop.py -- five turns, reload, assert -- repeated
with pytest-repeat, as a project without the lab would. Both run the same cell (no fault, refresh
once the last turn settled, 5 turns) on the correct and on the incident profile. Seconds per
trial are wall time over trials, start-up included on both sides. Also measured: 300 trials of
the correct cell (target: within 60 s on 2 cores), whether each defect shows in the first trial
of its exposing cell, and where the CPU went while the lab ran.

The bench measures; it does not judge. It exits 1 only when a measure measured
nothing: a loop with no counted trial, or the lab's trials all unknown. A missed target -- a
ratio, the 300-trial time, a first trial that did not reproduce, a baseline that behaved unlike
itself -- is printed, and fails the exit only with --fail-below. A plain correct repetition that
failed only by its own Playwright timeout is the machine's speed, not a finding: excluded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from lab.commands import bench_like, bench_standin
from lab.commands.bench_measure import Measure, junit_cases, tally
from lab.commands.chaos import DEFAULT_PAIRS
from lab.common.config import ROOT
from lab.common.errors import LabError
from lab.common.phases import breakdown_text, mean_per_trial
from lab.commands.cpu import CpuSplit
from lab.runner.runner import Runner
from lab.plan.schedule import Cell, plan_cell
from lab.stack.native import NativeStack
from services.chat.defects import INCIDENT, REGISTRY as DEFECTS

PLAIN_DIR = ROOT / "tests" / "bench" / "plain"
INCIDENT_DEFECTS = tuple(d for d in DEFECTS if d in INCIDENT)
# Each defect's expected anomaly (design: the defect catalogue): what its first trial must show.
EXPECTED = {
    "fire_and_forget": "lost",
    "ttl_set_once": "expired",
    "shared_loop_client": "phantom_fail",
    "blind_retry": "duplicated",
    "swallowed_errors": "lost",
    "save_at_stream_end": "lost",
    "session_cookie": "amnesia",
}
TARGETS = {"passing_ratio": 5.0, "failing_ratio": 20.0, "correct_300_s": 60.0}


def plain_loop(stack: NativeStack, defects: tuple[str, ...], count: int) -> Measure:
    with tempfile.TemporaryDirectory(prefix="chaoslab-bench-") as tmp:
        junit = Path(tmp) / "junit.xml"
        env = {**os.environ, "BENCH_DEFECTS": ",".join(defects)}
        t0 = time.monotonic()
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-c",
                str(PLAIN_DIR / "pytest.ini"),
                str(PLAIN_DIR),
                f"--count={count}",
                "--base-url",
                stack.cfg.chat_url,
                "-q",
                "-p",
                "no:randomly",
                f"--junitxml={junit}",
            ],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=count * 60 + 120,
        )
        seconds = time.monotonic() - t0
        if not junit.exists():
            raise LabError(
                f"the plain loop wrote no junit report (pytest exit {proc.returncode}): "
                + (proc.stdout + proc.stderr).strip()[-800:],
                hint=f"run it alone: {sys.executable} -m pytest -c {PLAIN_DIR / 'pytest.ini'} {PLAIN_DIR} "
                f"--base-url {stack.cfg.chat_url}",
            )
        cases = junit_cases(junit.read_text())
    name = "plain loop, " + ("incident" if defects else "correct")
    return tally(name, cases, seconds, exclude_timeouts=not defects)


def lab_cell(
    stack: NativeStack, cell: Cell, trials: int, concurrency: int, out_dir: Path, seed: int
) -> tuple[Measure, list[Any]]:
    t0 = time.monotonic()
    outcome = Runner(stack, out_dir, concurrency=concurrency).run([(cell, plan_cell(cell, trials, seed))])[0]
    seconds = time.monotonic() - t0
    failed = sum(t.failed for t in outcome.trials)
    unknown = sum(t.result.validity == "unknown" for t in outcome.trials)
    name = f"lab runner, {cell.profile}" + (f" ({unknown} unknown)" if unknown else "")
    return Measure(name, len(outcome.trials), failed, seconds, unknown=unknown), outcome.trials


def exposing_cells() -> dict[str, Cell]:
    """Each defect alone in the first cell of the default matrix that exposes it."""
    out: dict[str, Cell] = {}
    # Cells named for a defect first; the incident's own cell (exposed: None) for the rest.
    for fault, params, refresh, exposed in sorted(DEFAULT_PAIRS, key=lambda p: p[3] is None):
        for d in exposed or INCIDENT_DEFECTS:
            out.setdefault(d, Cell((d,), fault, refresh, 5, tuple(sorted(params.items()))))
    return {d: out[d] for d in DEFECTS if d in out}


def _ratio(a: float, b: float) -> float:
    return a / b if b else 0.0


def figures_text(rows: list[Measure], ratio_ok: float, ratio_bad: float, per_300: float, cell_id: str) -> str:
    lines = ["", f"{'':34} {'trials':>6} {'failed':>6} {'excluded':>8} {'s/trial':>8}"]
    lines += [f"{m.name:34} {m.trials:6d} {m.failed:6d} {m.timed_out:8d} {m.per_trial:8.3f}" for m in rows]
    lines += [
        f"{m.name}: {m.timed_out} trial{'s' if m.timed_out > 1 else ''} failed only by "
        f"{'their' if m.timed_out > 1 else 'its'} own Playwright timeout (a slow machine): excluded"
        for m in rows
        if m.timed_out
    ]
    lines += [
        "",
        f"passing trials: lab {ratio_ok:.1f}x faster than the plain loop (target >= {TARGETS['passing_ratio']:g}x)",
        f"failing trials: lab {ratio_bad:.1f}x faster than the plain loop (target >= {TARGETS['failing_ratio']:g}x)",
        f"300 trials of {cell_id}: {per_300:.0f} s at the measured pace (target <= {TARGETS['correct_300_s']:g} s)",
    ]
    return "\n".join(lines)


def targets_met(
    plain_ok: Measure,
    lab_ok: Measure,
    plain_bad: Measure,
    lab_bad: Measure,
    per_300: float,
    first: dict[str, dict[str, Any]],
) -> dict[str, bool]:
    return {
        "passing_ratio": _ratio(plain_ok.per_trial, lab_ok.per_trial) >= TARGETS["passing_ratio"],
        "failing_ratio": _ratio(plain_bad.per_trial, lab_bad.per_trial) >= TARGETS["failing_ratio"],
        "correct_300_s": per_300 <= TARGETS["correct_300_s"],
        "first_trial": all(v["reproduced"] for v in first.values()),
        "plain_correct_passed": plain_ok.failed == 0 and lab_ok.failed == 0,
        # A lab trial left unknown is judged for nothing: every counted incident trial must fail.
        "incident_failed": plain_bad.failed == plain_bad.trials and lab_bad.failed == lab_bad.counted,
    }


def _nothing(m: Measure) -> str:
    def its(n: int) -> str:
        return "its one trial" if n == 1 else f"all {n} of its trials"

    if m.trials == 0 and m.timed_out:
        return f"{m.name}: {its(m.timed_out)} failed only by a Playwright timeout (a slow machine)"
    if m.trials == 0:
        return f"{m.name}: no trial ran"
    return f"{m.name}: {its(m.trials)} unknown (exercised nothing)"


def exit_status(measures: list[Measure], checks: dict[str, bool], fail_below: bool) -> tuple[int, str]:
    """Measuring, not judging: 1 when a measure has no counted trial (no figure to compare), or
    when a target is missed and fail_below is set; else 0. With the line that says why."""
    empty = [m for m in measures if m.counted < 1]
    if empty:
        return 1, (
            "exit 1: measured nothing -- "
            + "; ".join(_nothing(m) for m in empty)
            + ". Rerun when the machine is quieter, or with more --plain-runs / --trials."
        )
    missed = [k for k, ok in checks.items() if not ok]
    if missed and fail_below:
        return 1, f"exit 1: targets missed ({', '.join(missed)}) and --fail-below given"
    if missed:
        return 0, "exit 0: both loops measured; a missed target is a figure (--fail-below makes it exit 1)"
    return 0, "exit 0: both loops measured, every target met"


def phases_text(phases: dict[str, dict[str, float]], lab_ok: Measure, lab_bad: Measure) -> str:
    lines = []
    for name, m in (("correct", lab_ok), ("incident", lab_bad)):
        lines.append(f"where a trial's time goes, lab runner, {name} profile (mean per trial):")
        lines.append(breakdown_text(phases[name], m.per_trial))
    return "\n".join(lines)


def first_trials_text(first: dict[str, dict[str, Any]]) -> str:
    lines = ["first trial of each defect's exposing cell:"]
    for d, v in first.items():
        shown = ", ".join(f"{k} {n}" for k, n in v["anomalies"].items()) or "no anomaly"
        verdict = (
            "unknown (" + "; ".join(v["reasons"])[:120] + ")"
            if v["validity"] == "unknown"
            else "reproduced"
            if v["reproduced"]
            else "NOT reproduced"
        )
        lines.append(f"  {d:<20} {verdict:<16} expected {v['expected']}; shown: {shown}   [{v['cell']}]")
    return "\n".join(lines)


def cpu_figures(cpu: CpuSplit) -> dict[str, Any]:
    return {
        "cpu_seconds": {k: round(v, 2) for k, v in cpu.used.items()},
        "cpu_wall_s": round(cpu.wall, 1),
        "browser_cpu_seconds": {k: round(v, 2) for k, v in cpu.parts().items()},
    }


@dataclass
class Bench:
    stack: NativeStack
    plain_runs: int = 60
    lab_trials: int = 300
    concurrency: int = 8
    seed: int = 1
    out_root: Path = ROOT / "reports"
    fail_below: bool = False  # exit 1 when a target is missed, not only when nothing was measured
    standin_trials: int = 40  # twin pairs (fake, stand-in) per round of the stand-in's cost (0: not measured)
    standin_rounds: int = 6
    like_trials: int = 30  # per side and round of investigate against chaos (0: not measured)
    like_rounds: int = 4
    investigate: bench_like.InvestigateSide | None = None  # lab.investigate's side, given by the CLI

    def _first_trials(self, out_dir: Path) -> dict[str, dict[str, Any]]:
        """One trial of each defect's exposing cell: does the defect show at once?"""
        first: dict[str, dict[str, Any]] = {}
        for d, c in exposing_cells().items():
            _, trials = lab_cell(self.stack, c, 1, 1, out_dir / d, self.seed)
            t = trials[0]
            shows = t.result.anomalies().get(EXPECTED.get(d, "lost"), 0) > 0
            first[d] = {
                "cell": c.cell_id,
                "expected": EXPECTED.get(d, "lost"),
                "reproduced": t.result.validity != "unknown" and shows,
                "validity": t.result.validity,
                "reasons": t.result.reasons[:3],
                "anomalies": {k: v for k, v in t.result.anomalies().items() if v and not k.startswith("lost_")},
            }
        return first

    def _standin(self, out_dir: Path, say: Callable[[str], None]) -> dict[str, Any]:
        say("  the stand-in model's cost: the correct cell on the fake and on the stand-in ...")
        cost = bench_standin.measure(
            self.stack.cfg,
            self.standin_trials,
            self.standin_rounds,
            1,  # one trial at a time: its own latency, not the browser's contention (measured noisier)
            out_dir / "standin",
            self.seed,
            say,
        )
        self.stack.up()  # the bench's own stack again (the measure restarted the backend)
        say(bench_standin.text(cost))
        return cost

    def _extra(self, figures: dict[str, Any], out_dir: Path, say: Callable[[str], None]) -> None:
        """The optional measures, each written as soon as it is in: the stand-in's cost, and
        investigate against lab chaos on the same experiment."""
        if self.standin_trials:
            figures["standin"] = self._standin(out_dir, say)
            (out_dir / "bench.json").write_text(json.dumps(figures, indent=2) + "\n")
        if self.like_trials and self.investigate is not None:
            say("  investigate against lab chaos, the same experiment ...")
            like = bench_like.measure(
                self.stack,
                self.investigate,
                self.like_trials,
                self.like_rounds,
                self.concurrency,
                out_dir / "like",
                self.seed,
                say,
            )
            say(bench_like.text(like))
            figures["like_with_like"] = like
            (out_dir / "bench.json").write_text(json.dumps(figures, indent=2) + "\n")

    def run(self, out: TextIO = sys.stdout) -> int:
        out_dir = self.out_root / ("bench-" + time.strftime("%Y%m%d-%H%M%S"))
        cell = Cell((), "none", "settled", 5)
        incident = Cell(INCIDENT_DEFECTS, "none", "settled", 5)
        say = lambda s: print(s, file=out, flush=True)  # noqa: E731
        say(
            f"bench on {self.stack.cfg.chat_url}: plain loop x{self.plain_runs} per profile, "
            f"lab {self.lab_trials} + {self.plain_runs} trials (concurrency {self.concurrency})"
        )
        say("  1/5 lab runner, correct profile ...")
        with CpuSplit(self.stack) as cpu:
            lab_ok, ok_trials = lab_cell(
                self.stack, cell, self.lab_trials, self.concurrency, out_dir / "lab-correct", self.seed
            )
        say("  2/5 lab runner, incident profile ...")
        lab_bad, bad_trials = lab_cell(
            self.stack, incident, self.plain_runs, self.concurrency, out_dir / "lab-incident", self.seed
        )
        say("  3/5 plain loop, correct profile ...")
        plain_ok = plain_loop(self.stack, (), self.plain_runs)
        say("  4/5 plain loop, incident profile (each failing run waits for its expect timeout) ...")
        plain_bad = plain_loop(self.stack, INCIDENT_DEFECTS, self.plain_runs)
        say("  5/5 each defect's exposing cell, one trial ...")
        first = self._first_trials(out_dir / "first")
        ratio_ok = _ratio(plain_ok.per_trial, lab_ok.per_trial)
        ratio_bad = _ratio(plain_bad.per_trial, lab_bad.per_trial)
        per_300 = lab_ok.per_trial * 300
        rows = [plain_ok, lab_ok, plain_bad, lab_bad]
        say(figures_text(rows, ratio_ok, ratio_bad, per_300, cell.cell_id))
        say(first_trials_text(first))
        say(f"CPU while the lab ran the correct cell: {cpu.text()}")
        phases = {
            "correct": mean_per_trial([t.phases for t in ok_trials]),
            "incident": mean_per_trial([t.phases for t in bad_trials]),
        }
        say(phases_text(phases, lab_ok, lab_bad))
        checks = targets_met(plain_ok, lab_ok, plain_bad, lab_bad, per_300, first)
        missed = [k for k, ok in checks.items() if not ok]
        say("targets met" if not missed else f"targets missed: {', '.join(missed)}")
        figures: dict[str, Any] = {
            "measures": [{**m.__dict__, "per_trial_s": round(m.per_trial, 4)} for m in rows],
            "ratios": {"passing": round(ratio_ok, 2), "failing": round(ratio_bad, 2)},
            "correct_300_s": round(per_300, 1),
            "first_trial": first,
            **cpu_figures(cpu),
            "phases_ms": {k: {p: round(1000 * v, 1) for p, v in ph.items()} for k, ph in phases.items()},
            "checks": checks,
            "concurrency": self.concurrency,
            "cores": os.cpu_count(),
        }
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "bench.json").write_text(json.dumps(figures, indent=2) + "\n")
        self._extra(figures, out_dir, say)
        say(f"figures: {out_dir / 'bench.json'}")
        code, why = exit_status(rows, checks, self.fail_below)
        say(why)
        return code
