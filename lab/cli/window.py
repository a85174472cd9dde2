"""`lab window`: when does a defect lose the chat -- one variable swept, the curve and its window."""

from __future__ import annotations

import argparse
import random
from pathlib import Path
from typing import Any

from lab.cli.common import add_mode, opt_int

HELP = """\
"Not every refresh lost data" and "only after long conversations": a window sweep says when.
One variable is varied, everything else fixed; each value runs on the defect alone and on the
correct profile, with trials added until the value's 95 % interval is narrow (or the cap).

  --vary refresh_delay_ms   the refresh this long after the answer (after_ack)
  --vary tab_gap_ms         the second tab sends this long after the first (two_tabs)
  --vary age_ttl_pct        the conversation's age at the refresh, in % of its TTL (ttl_elapse)
  --vary turns              the conversation's length

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
    w.add_argument("--profile", required=True, help="the defect(s): a defect name, a,b, or incident")
    w.add_argument("--vary", required=True, metavar="VAR", help=f"the variable: {', '.join(SWEEPS)}")
    w.add_argument("--values", default=None, metavar="A,B,...", help="the values tried (default: the sweep's own)")
    w.add_argument(
        "--fault", default=None, help="the fault the cells run under (default: none; age_ttl_pct: ttl_elapse)"
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


def run(args: argparse.Namespace) -> int:
    from lab.commands.window import FIRST_TRIALS, MAX_TRIALS, WindowRun
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
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    cap = args.max_trials or MAX_TRIALS
    print(
        f"lab window: {sweep.what} over {', '.join(map(str, values))}; {args.profile} and correct, "
        f"{FIRST_TRIALS}-{cap} trials per value, seed {seed} (replay the run with --seed {seed})",
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
