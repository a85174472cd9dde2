"""`lab window`: when does a defect lose the chat -- one variable swept, the curve and its window."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from lab.cli.common import add_mode, opt_int

HELP = """\
"Not every refresh lost data" and "only after long conversations": a window sweep says when.
One variable is varied, everything else fixed; each value runs on the defect alone and on the
correct profile, with trials added until the value's 95 % interval is narrow (or the cap).

  --vary refresh_delay_ms   the refresh this long after the answer (after_ack)
  --vary tab_gap_ms         the second tab sends this long after the first (two_tabs, 100 ms latency)
  --vary age_ttl_pct        the conversation's age at the refresh, in % of its TTL (ttl_elapse)
  --vary fault_onset_ms     a one-send fault (down) on this long after its turn's send began
  --vary turns              the conversation's length

With --target SPEC (lab investigate's spec of an app you did not write): refresh_delay_ms,
under 300 ms of latency on the Redis link by default, with two curves -- the stale read (the
page after the refresh lacks a turn the settled read has: a write that lands after the answer)
and the loss (the settled read lacks an acknowledged turn); tab_gap_ms (two tabs, 100 ms of
latency) and turns (no fault), with the loss curve.

The window comes back in words -- "loses the turn when the refresh comes within 30-100 ms of the
answer", or "at every delay tried: no wait saves it" -- with the curve and its band in
report.html and every point in results.json (value, k/n, Wilson interval, replay lines).
"""

EPILOG = """\
examples:
  lab window --profile fire_and_forget --vary refresh_delay_ms
  lab window --profile ttl_set_once --vary age_ttl_pct
  lab window --profile read_modify_write --vary tab_gap_ms --values 0,5,20,50,200
  lab window --profile fire_and_forget --vary refresh_delay_ms --fault latency:latency_ms=100
  lab window --target examples/foreign-app.toml --set start.env.FOREIGN_BUGS=write_after_answer --vary refresh_delay_ms
  lab window --target examples/foreign-app.toml --set start.env.FOREIGN_BUGS=read_modify_write --vary tab_gap_ms

exit: 0 measured; 1 the correct profile lost data (the curve is not the defect's alone);
3 a value with no judged trial (unknown); 2 bad input; 128+N a signal (partial report written).
"""


def add(sub: Any) -> None:
    from lab.plan.sweeps import SWEEPS

    w = sub.add_parser(
        "window",
        help="the window of vulnerability: loss rate against one variable, the correct profile beside",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=HELP,
        epilog=EPILOG,
    )
    add_mode(w)
    who = w.add_mutually_exclusive_group(required=True)
    who.add_argument("--profile", help="the defect(s) of the built-in service: a defect name, a,b, or incident")
    who.add_argument(
        "--target",
        metavar="SPEC",
        help="an app you did not write (lab investigate's spec): its after_ack refresh delayed "
        "(--vary refresh_delay_ms), curves of stale reads and losses",
    )
    w.add_argument(
        "--set", dest="sets", action="append", default=[], metavar="KEY=VALUE", help="with --target: as lab investigate"
    )
    w.add_argument(
        "--turns", type=opt_int("--turns", 1, 20), default=None, metavar="N", help="with --target: turns (default 3)"
    )
    w.add_argument("--vary", required=True, metavar="VAR", help=f"the variable: {', '.join(SWEEPS)}")
    w.add_argument("--values", default=None, metavar="A,B,...", help="the values tried (default: the sweep's own)")
    w.add_argument(
        "--fault",
        default=None,
        help="the fault the cells run under (default: none; tab_gap_ms: latency:latency_ms=100; age_ttl_pct: ttl_elapse)",
    )
    w.add_argument(
        "--max-trials",
        type=opt_int("--max-trials", 2, 200),
        default=None,
        metavar="N",
        help="most trials per value and profile (default: 15; the first round runs 5)",
    )
    w.add_argument(
        "--seed", type=opt_int("--seed", 0, 2**31 - 1), default=None, metavar="S", help="default: random, printed"
    )
    w.add_argument("--concurrency", type=opt_int("--concurrency", 1, 32), default=None, metavar="K")
    w.add_argument("--reports", default="reports", metavar="DIR", help="where window-<time>/ goes")
    w.set_defaults(func=run, long_running=True)


def _seed_and_cap(args: argparse.Namespace) -> tuple[int, int]:
    """The run's seed (random, printed, when not given) and the most trials per point."""
    from lab.cli.chaos import _seed
    from lab.commands.window import MAX_TRIALS

    return _seed(args.seed), args.max_trials or MAX_TRIALS


TARGET_VALUES = (0, 100, 300, 1000, 3000)  # a write after the answer takes round trips to land
TARGET_FAULT = "latency:latency_ms=300"  # as lab investigate's after_ack experiment


def run(args: argparse.Namespace) -> int:
    if args.target:
        return run_target(args)
    from lab.commands.window import FIRST_TRIALS, WindowRun
    from lab.common.errors import UsageError
    from lab.plan import sweeps
    from lab.plan.schedule import parse_fault, parse_profile
    from lab.stack import for_mode

    sweep = sweeps.get(args.vary)  # bad input: exit 2 before anything starts
    defects = parse_profile(args.profile)
    if not defects:
        raise UsageError("--profile correct: a window is the defect's; the correct profile runs beside it anyway")
    values = sweeps.parse_values(args.values, sweep) if args.values else sweep.values
    fault, params = parse_fault(args.fault) if args.fault else (None, {})
    for v in values:
        sweep.cell(defects, v, fault, **params)
    seed, cap = _seed_and_cap(args)
    print(
        f"lab window: {sweep.what} over {', '.join(map(str, values))}; {args.profile} and correct, "
        f"{min(FIRST_TRIALS, cap)}-{cap} trials per value, seed {seed} (replay the run with --seed {seed})",
        flush=True,
    )
    with for_mode(args.mode) as stack:
        return WindowRun(
            stack,
            sweep,
            defects,
            values,
            seed,
            Path(args.reports),
            fault=fault,
            params=params,
            concurrency=args.concurrency or 4,
            first=min(FIRST_TRIALS, cap),
            max_trials=cap,
        ).run()


def run_target(args: argparse.Namespace) -> int:
    from lab.commands.window import FIRST_TRIALS
    from lab.common.config import LabConfig
    from lab.common.errors import UsageError
    from lab.investigate.spec import parse as spec_mod
    from lab.investigate.run.experiments import Experiment
    from lab.investigate.run.window import TARGET_SWEEPS, TargetWindow
    from lab.plan import sweeps
    from lab.plan.schedule import fault_text, parse_fault

    sweep = sweeps.get(args.vary)
    if sweep.name not in TARGET_SWEEPS:
        raise UsageError(
            f"--target with --vary {sweep.name}: an app's window is swept by {', '.join(TARGET_SWEEPS)}",
            "the others need the built-in service's own switches (a TTL to age, a fault's onset): use --profile",
        )
    spec = spec_mod.load(Path(args.target), args.sets)  # bad spec: exit 2, nothing started
    refresh = sweep.name == "refresh_delay_ms"
    values = sweeps.parse_values(args.values, sweep) if args.values else TARGET_VALUES if refresh else sweep.values
    default_fault = TARGET_FAULT if refresh else fault_text(sweep.fault, dict(sweep.fault_params))
    fault, params = parse_fault(args.fault or default_fault)
    turns = args.turns or 3
    point = {"refresh_delay_ms": "after_ack", "tab_gap_ms": "two_tabs", "turns": "settled"}[sweep.name]

    def experiment(v: int) -> Experiment:
        knob = {"delay_ms": v} if refresh else {"gap_ms": v} if sweep.name == "tab_gap_ms" else {}
        n = v if sweep.name == "turns" else turns
        return Experiment(fault, tuple(sorted(params.items())), point, n, "lab window", **knob)

    plan = [(i, experiment(v)) for i, v in enumerate(values)]
    for _, e in plan:
        e.cell(spec.name)  # each value's cell validates it
    seed, cap = _seed_and_cap(args)
    print(
        f"lab window: {spec.name}, {sweep.what} over {', '.join(map(str, values))} under {args.fault or default_fault}; "
        f"{min(FIRST_TRIALS, cap)}-{cap} trials per value, seed {seed}",
        flush=True,
    )
    return TargetWindow(
        spec,
        LabConfig.from_env(),
        plan,
        min(FIRST_TRIALS, cap),
        Path(args.reports),
        seed,
        turns,
        args.sets,
        concurrency=args.concurrency or 4,
        sweep=sweep,
        values=tuple(values),
        first=min(FIRST_TRIALS, cap),
        max_trials=cap,
    ).run()
