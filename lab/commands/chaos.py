"""`lab chaos`: the defect x fault matrix, run many times, with verdicts; and `lab replay`."""

from __future__ import annotations

import itertools
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from lab.plan import shard as shards
from lab.plan.experiments import EVERY, chaos_rows
from lab.model.attribution import ALL_UNKNOWN, cell_stats, points_one_way, verdicts
from lab.common.errors import UsageError
from lab.report import decide, junit_xml, results_json, summary, write_run
from lab.model.outcome import CellOutcome, TrialOutcome
from lab.runner.runner import Runner
from lab.common import signals
from lab.common.signals import deferred, exit_code
from lab.plan.schedule import REFRESH_POINTS, Cell, parse_fault, parse_profile, plan_cell
from lab.stack import Stack
from lab.stack.model_link import ModelLink
from lab.report.model_side import model_side
from services.chat.defects import INCIDENT, REGISTRY as DEFECTS

DEFAULT_TRIALS = 5
# Sequential sampling's cap. 10 left shared_loop_client's random amnesia overlapping a certain
# one; 15 left ttl_set_once's expiry undecided in about half of the runs: in the incident,
# shared_loop_client's failures often fall between the list's creation and its EXPIRE, so only
# 6 of 15 incident conversations expired (a key with no TTL never does) -- clearly above 0/15
# needs 7. At 25, 7 of 25 suffices.
DEFAULT_MAX_TRIALS = 25
# Each defect's exposing cell (design.md, "exposed by"): (fault, params, refresh point, the
# defects it exposes), the rows of the one table of experiments (lab.plan.experiments) that
# expose one. Under (none, after_ack) -- the incident's own cell -- every profile runs (None);
# elsewhere the profiles its verdicts need: correct, incident, each exposed defect alone, and the
# incident without it. ONLY='profile=all' runs every profile everywhere (91 cells).
DEFAULT_PAIRS: list[tuple[str, dict[str, Any], str, tuple[str, ...] | None]] = [
    (r.fault, dict(r.params), r.refresh, None if r.exposes == EVERY else r.exposes) for r in chaos_rows()
]
ONLY_KEYS = ("profile", "fault", "refresh", "turns")


def default_profiles() -> list[tuple[str, ...]]:
    incident = tuple(d for d in DEFECTS if d in INCIDENT)
    profiles = [(), incident, *((d,) for d in DEFECTS), *(tuple(x for x in incident if x != d) for d in incident)]
    return profiles


def profiles_for(exposed: tuple[str, ...] | None) -> list[tuple[str, ...]]:
    if exposed is None:
        return default_profiles()
    incident = tuple(d for d in DEFECTS if d in INCIDENT)
    out = [
        (),
        incident,
        *((d,) for d in exposed),
        *(tuple(x for x in incident if x != d) for d in exposed if d in incident),
    ]
    return list(dict.fromkeys(out))


def check_modes(cells: list[Cell], mode: str, model: bool = False) -> None:
    """Bad input before anything starts: a fault the mode's stack cannot do, or one that acts on
    the stand-in model in a run without it (UsageError)."""
    from lab.faults import REGISTRY, check_mode

    for name in dict.fromkeys(c.fault for c in cells):
        check_mode(REGISTRY[name], mode)
        check_model(name, model)
    for c in cells:
        check_not_probe_only(dict(c.params))


def check_not_probe_only(params: dict[str, object]) -> None:
    """at=write (drop, write_refused), at=answer and at=later (write_refused) act at a target's own
    write or answer: lab investigate's alone."""
    if params.get("at") in ("write", "answer", "later"):
        raise UsageError(
            f"a fault at={params['at']} is lab investigate's: it acts at a target's own write or answer "
            "(drop at=write, write_refused at=write, at=answer or at=later)",
            "in lab chaos use at=send, the default (drop: the reset at the send's first reply; "
            "write_refused: every write of the send)",
        )


def check_model(fault: str, model: bool) -> None:
    from lab.faults import REGISTRY
    from lab.faults.standin_plan import StandInFault

    if not model and issubclass(REGISTRY[fault], StandInFault):
        raise UsageError(
            f"fault {fault} acts on the stand-in model, and this run's replies come from the service's own fake",
            "add --model (the built-in service then takes its replies from the stand-in)",
        )


def parse_only(text: str | None) -> dict[str, list[str]]:
    """ONLY='profile=incident|correct;fault=latency:latency_ms=800;refresh=in_flight;turns=15'."""
    out: dict[str, list[str]] = {}
    if not text:
        return out
    for term in filter(None, (t.strip() for t in text.split(";"))):
        key, eq, values = term.partition("=")
        key = key.strip()
        if not eq or key not in ONLY_KEYS:
            raise UsageError(
                f"ONLY term {term!r} is not key=value with key in {', '.join(ONLY_KEYS)}",
                "e.g. ONLY='profile=incident|correct;refresh=after_ack;turns=5|15'",
            )
        out[key] = [v.strip() for v in values.split("|") if v.strip()]
    return out


def build_matrix(only: dict[str, list[str]]) -> list[Cell]:
    """The default matrix, filtered or extended by ONLY (see `lab chaos --help`)."""
    chosen = only.get("profile")
    every = chosen == ["all"]
    profiles = None if chosen is None or every else [parse_profile(p) for p in chosen]
    try:
        turns = [int(t) for t in only.get("turns", ["5"])]
    except ValueError:
        raise UsageError(f"turns={only['turns']} must be integers", "e.g. turns=5|15") from None
    for r in only.get("refresh", []):
        if r not in REFRESH_POINTS:
            raise UsageError(f"unknown refresh point {r!r}", f"valid: {', '.join(REFRESH_POINTS)}")
    pairs = list(DEFAULT_PAIRS)
    if "fault" in only:
        wanted = [parse_fault(f) for f in only["fault"]]
        pairs = []
        for f, p in wanted:
            defaults = [(ff, pp, r, e) for ff, pp, r, e in DEFAULT_PAIRS if ff == f]
            pairs += [(f, p or pp, r, e) for ff, pp, r, e in defaults] or [(f, p, "settled", None)]
    if "refresh" in only:
        faults = list(dict.fromkeys((f, tuple(sorted(p.items()))) for f, p, _, _ in pairs))
        exposed_by = {(f, r): e for f, _, r, e in DEFAULT_PAIRS}
        pairs = [(f, dict(p), r, exposed_by.get((f, r))) for (f, p), r in itertools.product(faults, only["refresh"])]
    cells, seen = [], set()
    for fault, params, refresh, exposed in pairs:
        for prof in profiles if profiles is not None else (default_profiles() if every else profiles_for(exposed)):
            for t in turns:
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
        line = (
            f"[{'#' * fill}{'.' * (width - fill)}] {self.done}/{self.total} trials  "
            f"ETA {int(eta // 60)}m{int(eta % 60):02d}s  {cell.cell_id}: "
            f"{c[1]} failed, {c[2]} unknown of {c[0]}"
        )
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
    stack: Stack
    cells: list[Cell]
    trials: int
    seed: int
    reports_root: Path
    concurrency: int = 4
    mode: str = "native"
    max_trials: int = DEFAULT_MAX_TRIALS
    shard: tuple[int, int] | None = None  # (K, N): only shard K's cells of the matrix
    model: ModelLink | None = None  # the stand-in the backend takes its replies from (--model)

    def mine(self) -> list[Cell]:
        """This run's cells: the whole matrix, or shard K's whole columns of it."""
        if self.shard is None:
            return list(self.cells)
        k, n = self.shard
        return [self.cells[i] for i in shards.partition(self.cells, n)[k - 1]]

    def _number(self, cell: Cell) -> int:
        """The cell's place in the whole matrix (its trial ids say it, sharded or not)."""
        return next(i for i, c in enumerate(self.cells) if c.cell_id == cell.cell_id)

    def plans(self) -> list[tuple[Cell, list[Any]]]:
        """The first round's plans. Seeds and trial ids come from the cell's place in the whole
        matrix: a shard plans exactly the trials the unsharded run plans for its cells."""
        return [
            (c, plan_cell(c, self.trials, shards.cell_seed(self.seed, c), prefix=f"c{self._number(c):03d}-"))
            for c in self.mine()
        ]

    def run(self, out: TextIO = sys.stdout) -> int:
        tag = f"-shard{self.shard[0]}of{self.shard[1]}" if self.shard else ""
        run_id = time.strftime("%Y%m%d-%H%M%S") + f"-s{self.seed}{tag}"
        out_dir = self.reports_root / run_id
        outcomes, interrupted, seconds = self._trials(out_dir)
        # The report is written whole: a signal from here on is noted and raised once it is.
        with deferred():
            ordered = [outcomes[c.cell_id] for c in self.cells if c.cell_id in outcomes]
            stats = [cell_stats(o) for o in ordered if o.trials]
            vs = verdicts(stats)
            decision = decide(stats, vs, interrupted is not None)
            extra: dict[str, Any] = {
                "trials_per_cell": self.trials,
                "max_trials_per_cell": self.max_trials,
                "seconds": round(seconds, 1),
                "interrupted": interrupted is not None,
                **self._identity(),
            }
            if interrupted is not None:
                extra["signal"] = signals.name(exit_code(interrupted) - 128)
            side = model_side([t for o in ordered for t in o.trials]) if self.model is not None else None
            if side is not None:
                extra["model"] = side
            results = results_json(run_id, self.seed, self.mode, stats, vs, ordered, decision, extra)
            out_dir.mkdir(parents=True, exist_ok=True)
            # Every trial's record: a merge of shards can be checked against the union of trials.
            (out_dir / "trials.json").write_text(
                json.dumps([{"cell_id": o.cell.cell_id, "trial": t.trial.as_json()} for o in ordered for t in o.trials])
                + "\n"
            )
            write_run(out_dir, results, junit_xml(stats, decision), self.reports_root)
            failing = [t for o in ordered for t in o.trials if t.failed]
            print(
                summary(
                    stats,
                    decision,
                    out_dir,
                    seconds,
                    sum(len(o.trials) for o in ordered),
                    verdicts=vs,
                    replay=failing[0].replay_command() if failing else None,
                ),
                file=out,
                flush=True,
            )
            if side is not None and side["what"]:
                print(f"The model's side: {side['what']}.", file=out, flush=True)
        return exit_code(interrupted) if interrupted is not None else decision.exit_code

    def _trials(self, out_dir: Path) -> tuple[dict[str, CellOutcome], KeyboardInterrupt | None, float]:
        """The planned trials, then top-ups while verdicts point one way; on a signal, what had
        finished. Returns (outcomes by cell id, the signal if one came, seconds)."""
        planned = self.plans()
        progress = Progress(sum(len(p) for _, p in planned))
        runner = Runner(self.stack, out_dir, concurrency=self.concurrency, on_trial=progress.trial, model=self.model)
        t0 = time.monotonic()
        interrupted: KeyboardInterrupt | None = None
        outcomes: dict[str, CellOutcome] = {}
        try:
            batch, round_no = planned, 0
            while batch:
                for o in runner.run(batch):
                    known = outcomes.setdefault(o.cell.cell_id, CellOutcome(o.cell))
                    known.trials += o.trials
                    known.fault_error = known.fault_error or o.fault_error
                    known.fault_evidence = known.fault_evidence or o.fault_evidence
                round_no += 1
                batch = self._top_up(list(outcomes.values()), round_no)
                progress.total += sum(len(p) for _, p in batch)
        except KeyboardInterrupt as exc:  # SIGINT, SIGTERM or SIGHUP (lab.common.signals)
            interrupted = exc
            for o in runner.finished:  # the interrupted batch: its finished trials
                outcomes.setdefault(o.cell.cell_id, CellOutcome(o.cell)).trials += o.trials
        finally:
            progress.close()
        return outcomes, interrupted, time.monotonic() - t0

    def _identity(self) -> dict[str, Any]:
        """What a merge checks: the same matrix, sizes, seed and code; which shard this is."""
        out: dict[str, Any] = {
            "matrix": {
                "fingerprint": shards.fingerprint(self.cells, self.trials, self.max_trials),
                "cells": len(self.cells),
            },
            "lab_version": shards.lab_version(),
        }
        if self.shard is not None:
            out["shard"] = {"k": self.shard[0], "n": self.shard[1], "cells": [c.cell_id for c in self.mine()]}
        return out

    def _top_up(self, outcomes: list[CellOutcome], round_no: int) -> list[tuple[Cell, list]]:
        """More trials where a verdict is undecided but its point estimates point one way
        (alone above correct, host above host-without): sequential sampling up to max_trials.
        (Stopping when intervals separate favours "causes" slightly; max_trials bounds it.)"""
        stats = {s.cell.cell_id: s for s in (cell_stats(o) for o in outcomes if o.trials)}
        want: set[str] = set()
        for v in verdicts(list(stats.values())):
            if points_one_way(v, stats):
                want.update(cid for cid in (v.cells or ()) if stats[cid].trials < self.max_trials)
        by_id = {o.cell.cell_id: o for o in outcomes}
        # A cell whose every trial was unknown (e.g. shared_loop_client's wedged client failing
        # every send for a while) gets another round, as a lesson's check replaces unknown
        # trials; all its trials count against max_trials, so it can still end unexercised.
        left = {
            cid: self.max_trials - (len(by_id[cid].trials) if st.reason == ALL_UNKNOWN else st.trials)
            for cid, st in stats.items()
        }
        want |= {cid for cid, st in stats.items() if st.reason == ALL_UNKNOWN and left[cid] > 0}
        # A round adds TRIALS trials, or fewer where that would pass the cap: never over it.
        return [
            (
                by_id[cid].cell,
                plan_cell(
                    by_id[cid].cell,
                    min(self.trials, left[cid]),
                    shards.cell_seed(self.seed, by_id[cid].cell, round_no),
                    prefix=f"r{round_no}-c{self._number(by_id[cid].cell):03d}-",
                ),
            )
            for cid in sorted(want)
        ]
