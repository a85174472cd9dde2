"""`lab bench`: the lab's runner against the plain Playwright loop, seconds per trial."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from lab.cli.common import opt_int


def add(sub: Any) -> None:
    be = sub.add_parser(
        "bench",
        help="time the lab's runner against the plain Playwright loop",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="On one native stack: the plain loop (tests/bench/plain, "
        "pytest-repeat) and the lab's runner, on the correct and the incident "
        "profile; prints seconds per trial, the ratios, 300 trials of the correct "
        "cell, whether each defect shows in its exposing cell's first trial, and "
        "the CPU split (browser, backend, runner, Redis+Toxiproxy), and what the stand-in model "
        "adds to a trial (the correct cell on the service's fake and on the stand-in, no model "
        "latency, ABBA rounds; the median's ratio against a 5%% bound), and what a trial of "
        "lab investigate costs beside a trial of lab chaos running the same experiment on the same "
        "service (the correct cell; ABBA rounds, the ratio printed side by side).\n\n"
        "It measures, it does not judge: exit 0 when both loops measured something, 1 when a "
        "measure counted no trial (every lab trial unknown, or every plain correct repetition "
        "failed only by its own Playwright timeout -- a slow machine's, excluded from the "
        "figures). Missed targets (the ratios, 300 trials in 60 s, a first trial that did not "
        "reproduce, a baseline that behaved unlike itself) are printed; --fail-below makes them "
        "exit 1.\n\n"
        "  make bench                       defaults (about 10 minutes on 2 cores)\n"
        "  make bench FAIL_BELOW=1          the same, exit 1 when a target is missed\n"
        "  lab bench --plain-runs 10 --trials 50   a quick look",
    )
    be.add_argument(
        "--plain-runs",
        type=opt_int("--plain-runs", 1, 1000),
        default=None,
        metavar="N",
        help="repetitions of the plain loop per profile, and lab trials of the incident (default 60)",
    )
    be.add_argument(
        "--trials",
        type=opt_int("--trials", 1, 5000),
        default=None,
        metavar="N",
        help="lab trials of the correct cell (default 300)",
    )
    be.add_argument(
        "--concurrency",
        type=opt_int("--concurrency", 1, 32),
        default=None,
        metavar="K",
        help="trials the lab runs at once (default 8)",
    )
    be.add_argument(
        "--fail-below",
        action="store_true",
        help="exit 1 when a target is missed (default: print the figures and exit 0)",
    )
    _add_standin(be)
    _add_like(be)
    be.add_argument("--reports", default="reports", metavar="DIR", help="where bench-<time>/ goes")
    be.set_defaults(func=run, long_running=True)


def _add_measure(be: argparse.ArgumentParser, name: str, trials_help: str, rounds_help: str) -> None:
    """A measure's ``--NAME-trials N`` (0 skips it) and ``--NAME-rounds R``."""
    be.add_argument(
        f"--{name}-trials", type=opt_int(f"--{name}-trials", 0, 1000), default=None, metavar="N", help=trials_help
    )
    be.add_argument(
        f"--{name}-rounds", type=opt_int(f"--{name}-rounds", 1, 100), default=None, metavar="R", help=rounds_help
    )


def _add_like(be: argparse.ArgumentParser) -> None:
    _add_measure(
        be,
        "like",
        "investigate against lab chaos: trials of the same experiment (the correct cell) per side "
        "and round, lab chaos on the built-in service, lab investigate on it as a black box "
        "(examples/chat-service.toml) (default 30; 0 skips it)",
        "rounds of investigate against lab chaos, the sides in ABBA order (default 4)",
    )


def _add_standin(be: argparse.ArgumentParser) -> None:
    _add_measure(
        be,
        "standin",
        "the stand-in model's cost: twin pairs per round -- each plan of the correct cell once on the "
        "service's in-process fake and once on the stand-in, back to back, no model latency on either "
        "(default 40; 0 skips it)",
        "rounds of the stand-in's cost, one trial at a time, the twin that runs first alternating (ABBA) (default 6)",
    )


def run(args: argparse.Namespace) -> int:
    from lab.common.config import LabConfig, checkout

    checkout("lab bench")
    from lab.commands.bench import Bench
    from lab.investigate.run.bench_side import run_cell
    from lab.stack.native import NativeStack

    with NativeStack(LabConfig.from_env()) as stack:  # the bench measures the native stack
        b = Bench(stack, out_root=Path(args.reports), fail_below=args.fail_below, investigate=run_cell)
        b.plain_runs = args.plain_runs or b.plain_runs
        b.lab_trials = args.trials or b.lab_trials
        b.concurrency = args.concurrency or b.concurrency
        b.standin_trials = b.standin_trials if args.standin_trials is None else args.standin_trials
        b.standin_rounds = args.standin_rounds or b.standin_rounds
        b.like_trials = b.like_trials if args.like_trials is None else args.like_trials
        b.like_rounds = args.like_rounds or b.like_rounds
        return b.run()
