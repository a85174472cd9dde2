"""`lab replay`: one trial of a cell re-run N times from its replay line -- reproduced k/N."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TextIO

from lab.common.errors import UsageError
from lab.plan import ids
from lab.plan.schedule import REFRESH_POINTS, Cell, parse_fault, parse_profile, plan_trial
from lab.runner.runner import Runner
from lab.stack import Stack
from lab.stack.model_link import ModelLink


def check_replay(profile: str, fault: str, refresh: str, mode: str, model: bool = False) -> None:
    """Bad input before anything starts (UsageError naming the bad value and the valid ones)."""
    from lab.commands.chaos import check_model, check_not_probe_only
    from lab.faults import REGISTRY, check_mode

    parse_profile(profile)
    check_mode(REGISTRY[parse_fault(fault)[0]], mode)
    check_model(parse_fault(fault)[0], model)
    check_not_probe_only(parse_fault(fault)[1])
    if refresh not in REFRESH_POINTS:
        raise UsageError(f"unknown refresh point {refresh!r}", f"valid: {', '.join(REFRESH_POINTS)}")


def replay(
    stack: Stack,
    profile: str,
    fault: str,
    refresh: str,
    turns: int,
    seed: int,
    fault_turn: int | None,
    runs: int,
    reports_root: Path,
    out: TextIO = sys.stdout,
    knobs: tuple[tuple[str, int], ...] = (),
    model: ModelLink | None = None,
) -> int:
    name, params = parse_fault(fault)
    cell = Cell(parse_profile(profile), name, refresh, turns, tuple(sorted(params.items())), knobs=knobs)
    plans = [plan_trial(cell, seed, ids.trial_id("replay-", i, width=2), fault_turn) for i in range(runs)]
    out_dir = reports_root / ("replay-" + time.strftime("%Y%m%d-%H%M%S") + f"-s{seed}")
    outcome = Runner(stack, out_dir, concurrency=1, model=model).run([(cell, plans)])[0]
    failed = [t for t in outcome.trials if t.failed]
    unknown = [t for t in outcome.trials if t.result.validity == "unknown"]
    print(
        f"{cell.cell_id}, seed {seed}: reproduced {len(failed)}/{runs}"
        + (f" ({len(unknown)} unknown)" if unknown else ""),
        file=out,
    )
    for t in failed[:1]:
        print(f"  anomalies: {', '.join(t.result.reasons)}; artifacts: {t.artifacts}", file=out)
    return 0 if failed else 1
