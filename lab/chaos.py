"""`lab chaos`: the defect x fault matrix, run many times, with verdicts; and `lab replay`."""

from __future__ import annotations

import itertools
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from lab.attribution import CellStats, cell_stats, verdicts
from lab.errors import UsageError
from lab.report import decide, junit_xml, results_json, table, write_run
from lab.runner import CellOutcome, Runner, TrialOutcome
from lab.schedule import REFRESH_POINTS, Cell, fault_text, parse_fault, parse_profile, plan_cell, plan_trial
from lab.stack.native import NativeStack
from services.chat.defects import INCIDENT, REGISTRY as DEFECTS

DEFAULT_TRIALS = 5
# Each defect's exposing cell (design.md, "exposed by"), plus the network faults every profile
# meets: (fault, refresh point).
DEFAULT_PAIRS: list[tuple[str, dict[str, Any], str]] = [
    ("none", {}, "after_ack"),                       # fire_and_forget, shared_loop_client
    ("latency", {"latency_ms": 300}, "after_ack"),   # fire_and_forget under a slow link
    ("drop", {"stream": "downstream", "one_shot": True}, "settled"),   # blind_retry
    ("down", {}, "settled"),                         # swallowed_errors
    ("ttl_elapse", {"ttl_ms": 1000}, "settled"),     # ttl_set_once
    ("none", {}, "mid_stream"),                      # save_at_stream_end
    ("none", {}, "browser_restart"),                 # session_cookie
]
ONLY_KEYS = ("profile", "fault", "refresh", "turns")


def default_profiles() -> list[tuple[str, ...]]:
    incident = tuple(d for d in DEFECTS if d in INCIDENT)
    profiles = [(), incident, *((d,) for d in DEFECTS),
                *(tuple(x for x in incident if x != d) for d in incident)]
    return profiles


def parse_only(text: str | None) -> dict[str, list[str]]:
    """ONLY='profile=incident|correct;fault=latency:latency_ms=800;refresh=in_flight;turns=15'."""
    out: dict[str, list[str]] = {}
    if not text:
        return out
    for term in filter(None, (t.strip() for t in text.split(";"))):
        key, eq, values = term.partition("=")
        key = key.strip()
        if not eq or key not in ONLY_KEYS:
            raise UsageError(f"ONLY term {term!r} is not key=value with key in {', '.join(ONLY_KEYS)}",
                             "e.g. ONLY='profile=incident|correct;refresh=after_ack;turns=5|15'")
        out[key] = [v.strip() for v in values.split("|") if v.strip()]
    return out


def build_matrix(only: dict[str, list[str]]) -> list[Cell]:
    profiles = [parse_profile(p) for p in only["profile"]] if "profile" in only else default_profiles()
    try:
        turns = [int(t) for t in only.get("turns", ["5"])]
    except ValueError:
        raise UsageError(f"turns={only['turns']} must be integers", "e.g. turns=5|15") from None
    for r in only.get("refresh", []):
        if r not in REFRESH_POINTS:
            raise UsageError(f"unknown refresh point {r!r}", f"valid: {', '.join(REFRESH_POINTS)}")
    faults = [parse_fault(f) for f in only["fault"]] if "fault" in only else None
    if "refresh" in only:
        fl = faults or [(f, p) for f, p, _ in DEFAULT_PAIRS]
        uniq = list(dict.fromkeys((f, tuple(sorted(p.items()))) for f, p in fl))
        pairs = [(f, dict(p), r) for (f, p), r in itertools.product(uniq, only["refresh"])]
    elif faults is not None:
        by_name = {f: r for f, _, r in DEFAULT_PAIRS}
        pairs = []
        for f, p in faults:
            defaults = [(ff, pp, r) for ff, pp, r in DEFAULT_PAIRS if ff == f]
            pairs += [(f, p or pp, r) for ff, pp, r in defaults] or [(f, p, by_name.get(f, "settled"))]
    else:
        pairs = list(DEFAULT_PAIRS)
    cells = []
    seen = set()
    for (fault, params, refresh), prof, t in itertools.product(pairs, profiles, turns):
        cell = Cell(prof, fault, refresh, t, tuple(sorted(params.items())))
        if cell.cell_id not in seen:
            seen.add(cell.cell_id)
            cells.append(cell)
    return cells


class Progress:
    """One live line: trials done, ETA, the current cell and its running counts."""

    def __init__(self, total: int, stream: TextIO = sys.stderr) -> None:
        self.total, self.done, self.stream, self.t0 = total, 0, stream, time.monotonic()
        self.tty = stream.isatty()
        self.cell_counts: dict[str, list[int]] = {}

    def trial(self, cell: Cell, t: TrialOutcome) -> None:
        self.done += 1
        c = self.cell_counts.setdefault(cell.cell_id, [0, 0, 0])
        c[0] += 1
        c[1] += t.failed
        c[2] += t.result.validity == "unknown"
        elapsed = time.monotonic() - self.t0
        eta = elapsed / self.done * (self.total - self.done)
        width = 24
        fill = int(width * self.done / self.total)
        line = (f"[{'#' * fill}{'.' * (width - fill)}] {self.done}/{self.total} trials  "
                f"ETA {int(eta // 60)}m{int(eta % 60):02d}s  {cell.cell_id}: "
                f"{c[1]} failed, {c[2]} unknown of {c[0]}")
        if self.tty:
            self.stream.write("\r\033[K" + line)
        elif self.done % 25 == 0 or self.done == self.total:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")


@dataclass
class ChaosRun:
    stack: NativeStack
    cells: list[Cell]
    trials: int
    seed: int
    reports_root: Path
    concurrency: int = 4
    mode: str = "native"

    def run(self, out: TextIO = sys.stdout) -> int:
        run_id = time.strftime("%Y%m%d-%H%M%S") + f"-s{self.seed}"
        out_dir = self.reports_root / run_id
        rng = random.Random(self.seed)
        planned = [(c, plan_cell(c, self.trials, rng.randrange(1 << 31), prefix=f"c{i:03d}-"))
                   for i, c in enumerate(self.cells)]
        progress = Progress(sum(len(p) for _, p in planned))
        runner = Runner(self.stack, out_dir, concurrency=self.concurrency, on_trial=progress.trial)
        t0 = time.monotonic()
        interrupted = False
        try:
            outcomes = runner.run(planned)
        except KeyboardInterrupt:
            interrupted = True
            outcomes = runner.finished
        finally:
            progress.close()
        seconds = time.monotonic() - t0
        stats = [cell_stats(o) for o in outcomes if o.trials]
        vs = verdicts(stats)
        decision = decide(stats, vs, interrupted)
        results = results_json(run_id, self.seed, self.mode, stats, vs, outcomes, decision,
                               {"trials_per_cell": self.trials, "seconds": round(seconds, 1),
                                "interrupted": interrupted})
        write_run(out_dir, results, junit_xml(stats, decision), self.reports_root)
        print(summary(stats, vs, decision, out_dir, seconds, outcomes), file=out)
        return 130 if interrupted else decision.exit_code


def summary(stats: list[CellStats], vs: list, decision: Any, out_dir: Path, seconds: float,
            outcomes: list[CellOutcome]) -> str:
    n = sum(len(o.trials) for o in outcomes)
    lines = ["", table(stats), "", "Verdicts:"]
    causes = [v for v in vs if v.causes]
    lines += [f"  - {v.sentence()}" for v in causes] or ["  (none: no defect met the attribution rule)"]
    inconclusive = [v for v in vs if not v.causes]
    if inconclusive:
        lines.append(f"  ({len(inconclusive)} inconclusive; see results.json)")
    failing = [t for o in outcomes for t in o.trials if t.failed]
    if failing:
        lines += ["", f"Failing trials: {len(failing)} (artifacts in {out_dir}/trials/); replay one:",
                  f"  {failing[0].plan.replay_command()}"]
    lines += ["", f"{n} trials in {seconds:.0f} s ({seconds / max(n, 1):.2f} s per trial); "
              f"report: {out_dir}/results.json, junit.xml"]
    if decision.exit_code == 0:
        lines.append("Run valid: every cell exercised, the correct profile lost nothing.")
    else:
        lines.append("Run NOT valid:")
        lines += [f"  - {r}" for r in decision.reasons]
    return "\n".join(lines)


def replay(stack: NativeStack, profile: str, fault: str, refresh: str, turns: int, seed: int,
           fault_turn: int | None, runs: int, reports_root: Path, out: TextIO = sys.stdout) -> int:
    name, params = parse_fault(fault)
    cell = Cell(parse_profile(profile), name, refresh, turns, tuple(sorted(params.items())))
    plans = [plan_trial(cell, seed, f"replay-{i:02d}", fault_turn) for i in range(runs)]
    out_dir = reports_root / ("replay-" + time.strftime("%Y%m%d-%H%M%S") + f"-s{seed}")
    outcome = Runner(stack, out_dir, concurrency=1).run([(cell, plans)])[0]
    failed = [t for t in outcome.trials if t.failed]
    unknown = [t for t in outcome.trials if t.result.validity == "unknown"]
    print(f"{cell.cell_id}, seed {seed}: reproduced {len(failed)}/{runs}"
          + (f" ({len(unknown)} unknown)" if unknown else ""), file=out)
    for t in failed[:1]:
        print(f"  anomalies: {', '.join(t.result.reasons)}; artifacts: {t.artifacts}", file=out)
    return 0 if failed else 1
