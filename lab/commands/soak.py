"""`lab soak`: the correct profile (no defect) under every fault the stack can do and at every
refresh point, many times -- the evidence that the lab's correct code really is correct, and
how sure that is: each cell's "0/N" comes with the 95 % Wilson upper bound of the rate that
N clean trials cannot rule out (0/300 means "below 1.3 %", not "never").

It is `lab chaos` with a fixed matrix: the same ChaosRun, Runner, checker and cell statistics,
the same results.json / junit.xml / report.html in the run folder, and a soak table on top.
"""

from __future__ import annotations

import io
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from lab.commands.chaos import ChaosRun, build_matrix, parse_only
from lab.faults import REGISTRY as FAULTS
from lab.plan.schedule import REFRESH_POINTS, Cell, fault_text
from lab.stack import Stack
from lab.model.stats import wilson

DEFAULT_TRIALS = 15  # per cell: 13 faults x 6 refresh points x 15 = 1170 trials, ~9 min on 2 cores
# The soak's cells wait more than they work (10-turn conversations at in_flight, restarts,
# paced ttl_elapse): 16 at once ran 3900 trials at ~2.3 trials/s where 4 managed ~0.7.
DEFAULT_CONCURRENCY = 16
# Each fault with the parameters that make it a meaningful test of the correct code:
# - redis_restart with AOF (durable): without persistence a restart loses data by design (the
#   environment, not the code), so only the durable variant can prove "nothing acknowledged lost";
# - ack_lost: the user's retry of a send the page marked "not saved" is part of every cell
#   (Cell.user_retry), so a cut acknowledgement must not become a loss *or* a duplicate;
# - the others as `lab chaos` runs them (its exposing cells), else the fault's own defaults.
FAULT_TERMS: dict[str, str] = {
    "none": "none",
    "latency": "latency:latency_ms=300",
    "drop": "drop:one_shot=true,stream=downstream",
    "blackhole": "blackhole",
    "down": "down",
    "bandwidth": "bandwidth:rate_kbps=16",  # 1 KB/s (its default) makes a trial ~6 s
    "slicer": "slicer:average_size=1,delay_us=100",  # one byte per packet: the parser's test
    "slow_close": "slow_close",
    "ttl_elapse": "ttl_elapse:ttl_ms=2000",
    "redis_pause": "redis_pause",
    "redis_restart": "redis_restart:durable=true",
    "backend_restart": "backend_restart",
    "ack_lost": "ack_lost",
}
METRICS = ("lost", "duplicated")


def soak_faults(mode: str) -> tuple[list[str], list[str]]:
    """(fault terms the soak runs, fault names left out because this mode cannot do them)."""
    run, left_out = [], []
    for name, cls in sorted(FAULTS.items()):
        if mode not in cls.modes:
            left_out.append(name)
        elif name in FAULT_TERMS:
            run.append(FAULT_TERMS[name])
        else:  # a fault added after this list: soak it with its defaults rather than miss it
            run.append(name)
    return run, left_out


def soak_only(mode: str, refresh: tuple[str, ...] = REFRESH_POINTS) -> str:
    """The ONLY filter (`lab chaos --only` syntax) of the soak's matrix."""
    faults, _ = soak_faults(mode)
    return f"profile=correct;fault={'|'.join(faults)};refresh={'|'.join(refresh)}"


IN_FLIGHT_ONE_SEND_TURNS = 10


def soak_matrix(mode: str) -> list[Cell]:
    """Every (fault, refresh point) for the correct profile, 5 turns; two adjustments so that
    every cell can count as exercised (>= 80 % of sends acknowledged, lab.model.attribution):
    - a one-send fault with the in_flight refresh point loses two acknowledgements by design
      (the faulted send, the last one reloaded in flight): 3/5 -- so 10 turns there (8-9/10);
    - ack_lost cells retry the cut send as the user would (Cell.retry_cut)."""
    from dataclasses import replace

    cells = []
    for c in build_matrix(parse_only(soak_only(mode))):
        if c.refresh == "in_flight" and c.make_fault().window != "trial":
            c = replace(c, turns=IN_FLIGHT_ONE_SEND_TURNS)
        if c.fault == "ack_lost":
            c = replace(c, retry_cut=True)
        cells.append(c)
    return cells


@dataclass
class SoakRow:
    """One cell's (or one fault's) counts: trials with a verdict, unknown ones, and the trials
    that lost / duplicated an acknowledged message."""

    name: str
    trials: int
    unknown: int
    lost: int
    duplicated: int
    status: str = "valid"
    reason: str = ""

    @property
    def bad(self) -> int:
        return max(self.lost, self.duplicated)

    def upper(self) -> float:
        """95 % Wilson upper bound of the rate of trials losing or duplicating."""
        return wilson(self.bad, self.trials)[1]

    def line(self, width: int) -> str:
        bound = f"< {self.upper():.1%}" if self.trials else "n/a"
        tail = f"  {self.unknown} unknown" if self.unknown else ""
        if self.status == "unexercised":
            tail += f"  UNEXERCISED: {self.reason}"
        return (
            f"  {self.name:<{width}}  lost {self.lost}/{self.trials:<4}  duplicated "
            f"{self.duplicated}/{self.trials:<4}  95% upper bound {bound}{tail}"
        )


def rows_from(results: dict[str, Any]) -> tuple[list[SoakRow], list[SoakRow]]:
    """Per cell and per fault, from a run's results.json (its `cells`)."""
    cells: list[SoakRow] = []
    faults: dict[str, SoakRow] = {}
    for c in results.get("cells", []):
        fault = fault_text(c["fault"], c.get("fault_params", {}))
        row = SoakRow(
            f"{fault} / {c['refresh']}",
            c["trials"],
            c["unknown"],
            c["rates"]["lost"]["k"],
            c["rates"]["duplicated"]["k"],
            c["status"],
            c["reason"],
        )
        cells.append(row)
        agg = faults.setdefault(fault, SoakRow(fault, 0, 0, 0, 0))
        agg.trials += row.trials
        agg.unknown += row.unknown
        agg.lost += row.lost
        agg.duplicated += row.duplicated
        if row.status == "unexercised":
            agg.status, agg.reason = "unexercised", f"{c['refresh']}: {row.reason}"
    return cells, list(faults.values())


def verdict(results: dict[str, Any], expected_cells: int) -> tuple[int, list[str]]:
    """Exit 0 only if nothing acknowledged was lost or duplicated and every cell was exercised
    (all of them run, none interrupted)."""
    cells, _ = rows_from(results)
    problems = [
        f"{r.name}: lost in {r.lost}/{r.trials}, duplicated in {r.duplicated}/{r.trials}"
        for r in cells
        if r.lost or r.duplicated
    ]
    problems += [f"{r.name}: unexercised ({r.reason})" for r in cells if r.status == "unexercised"]
    if len(cells) < expected_cells:
        problems.append(f"only {len(cells)} of {expected_cells} cells have trials")
    if results.get("interrupted"):
        problems.append("interrupted: the figures cover the finished trials only")
    return (1 if problems else 0), problems


def render(results: dict[str, Any], expected_cells: int, out_dir: Path) -> tuple[int, str]:
    cells, faults = rows_from(results)
    code, problems = verdict(results, expected_cells)
    width = max([len(r.name) for r in cells] + [10])
    n = sum(r.trials + r.unknown for r in cells)
    lines = [
        "",
        "Soak: the correct profile, acknowledged messages lost / duplicated per cell "
        "(trials with a verdict; the bound is what 0/N cannot rule out)",
    ]
    lines += [r.line(width) for r in cells]
    lines += ["", "Per fault (all refresh points):"]
    lines += [r.line(width) for r in faults]
    lines += [
        "",
        f"{n} trials in {results.get('seconds', 0):.0f} s, seed {results.get('seed')}; "
        f"results: {out_dir}/results.json, soak.json",
    ]
    replay = results.get("replay") or {}
    if replay:
        tid, cmd = next(iter(replay.items()))
        lines += [f"a failing trial ({tid}): {cmd}"]
    lines.append(
        "Soak PASSED: nothing acknowledged lost or duplicated, every cell exercised." if code == 0 else "Soak FAILED:"
    )
    lines += [f"  - {p}" for p in problems]
    return code, "\n".join(lines)


def run(
    stack: Stack,
    trials: int,
    seed: int,
    reports_root: Path,
    concurrency: int,
    mode: str = "native",
    out: TextIO = sys.stdout,
) -> int:
    cells = soak_matrix(mode)
    _, left_out = soak_faults(mode)
    if left_out:
        print(f"lab soak: left out (the {mode} stack cannot do them): {', '.join(left_out)}", file=out, flush=True)
    root = reports_root / ("soak-" + time.strftime("%Y%m%d-%H%M%S"))
    chaos = ChaosRun(
        stack, cells, trials, seed, root, concurrency=concurrency, mode=mode, max_trials=trials
    )  # no top-up: there are no verdicts to sharpen
    # The chaos summary (a one-row table, "no verdicts") says less than the soak table: keep
    # it in the run folder instead of on the terminal.
    summary = io.StringIO()
    chaos_code = chaos.run(out=summary)
    run_dir = (root / "latest").resolve()
    (run_dir / "chaos-summary.txt").write_text(summary.getvalue())
    results = json.loads((run_dir / "results.json").read_text())
    code, text = render(results, len(cells), run_dir)
    cells_rows, fault_rows = rows_from(results)
    (run_dir / "soak.json").write_text(
        json.dumps(
            {
                "exit": code,
                "trials_per_cell": trials,
                "seed": seed,
                "left_out": left_out,
                "cells": [r.__dict__ | {"upper95": r.upper()} for r in cells_rows],
                "faults": [r.__dict__ | {"upper95": r.upper()} for r in fault_rows],
            },
            indent=2,
        )
        + "\n"
    )
    print(text, file=out, flush=True)
    if chaos_code not in (0, 1):  # interrupted (130...): the caller maps it to the signal
        return chaos_code
    return code
