"""`lab chaos`, `lab replay`, `lab soak`, `lab merge`: the matrix on the real stack."""

from __future__ import annotations

import argparse
import random
from pathlib import Path
from typing import Any

from lab.cli.common import add_mode, add_model, opt_int

SOAK_HELP = """\
Soak the correct code: the chat backend with no defect, under every fault the stack can do and
at every refresh point, TRIALS times per cell. A correct chat must never lose or duplicate a
message it acknowledged -- but "it never failed" only means something with its number of
trials: each cell is reported as k/N with the 95% Wilson upper bound of the failure rate N clean
trials cannot rule out (0/50: below 7.1%; 0/300: below 1.3%; roughly 3/N).

The faults are run as a correct system must survive them: redis_restart with AOF (appendfsync
always; without persistence a restart loses data by design: that is the environment, not the
code), ack_lost with the user's retry of the send the page marked "not saved" (a cut
acknowledgement must become neither a loss nor a duplicate). Faults the mode cannot do
(compose-only ones on the native stack) are left out, and named.

Exit status: 0 only if nothing acknowledged was lost or duplicated and every cell was exercised
(fault confirmed, trials with a verdict, most sends acknowledged); 1 otherwise; 2 bad input;
130/143/129 interrupted by SIGINT/SIGTERM/SIGHUP (the partial figures are still written).
"""

SOAK_EPILOG = """\
examples:
  make soak                       TRIALS=15: 13 faults x 8 refresh points x 15 trials
  make soak TRIALS=50             400 trials per fault: bounds near 1 % per fault
  lab soak --trials 5 --seed 7    replayable: the seed fixes every trial's plan

Writes reports/soak-<time>/<run-id>/: soak.json (per cell and per fault: trials, unknown, lost,
duplicated, upper95), and the chaos run's results.json, junit.xml, report.html, failing trials.
"""

CHAOS_EPILOG = (
    "ONLY filters or extends the matrix, terms separated by ';', values by '|':\n"
    "  --only 'profile=incident|correct;refresh=after_ack;turns=5|15'\n"
    "  --only 'fault=latency:latency_ms=800'\n"
    "profiles: correct, incident, incident-<defect>, or defect names joined by ','"
)


def add(sub: Any) -> None:
    _add_chaos(sub)
    _add_replay(sub)
    _add_soak(sub)
    mg = sub.add_parser(
        "merge",
        help="merge the shards of one lab chaos run into one verdict",
        description="Cell counts add; Wilson intervals and verdicts are recomputed from "
        "the merged counts; one results.json, junit.xml and report.html (failing trials' "
        "artifacts linked from their shard folders). Shards of different seeds, matrices "
        "or lab versions, a missing shard or one given twice are refused (exit 2). "
        "Exit status as lab chaos: 0 valid run.",
        epilog="  lab merge reports/*-shard1of3 reports/*-shard2of3 reports/*-shard3of3 --out reports/merged",
    )
    mg.add_argument("dirs", nargs="+", metavar="DIR", help="the shards' run folders (or their results.json)")
    mg.add_argument("--out", required=True, metavar="DIR", help="the merged run folder to write")
    mg.set_defaults(func=run_merge)


def _add_chaos(sub: Any) -> None:
    ch = sub.add_parser(
        "chaos",
        help="run the defect x fault matrix with verdicts (make chaos)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run each cell (defect profile x fault x refresh point x turns) "
        "N times on the real stack, check every trial, and attribute the loss to a "
        "defect with Wilson intervals. Writes reports/<run-id>/results.json and "
        "junit.xml, keeps artifacts of failing trials, prints a replay command.",
        epilog=CHAOS_EPILOG,
    )
    add_mode(ch)
    add_model(ch)
    ch.add_argument(
        "--trials", type=opt_int("--trials", 1, 1000), default=None, metavar="N", help="trials per cell (default: 5)"
    )
    ch.add_argument(
        "--seed",
        type=opt_int("--seed", 0, 2**31 - 1),
        default=None,
        metavar="S",
        help="seed of the run's schedules (default: random, printed)",
    )
    ch.add_argument("--only", default="", metavar="FILTER", help="filter/extend the matrix (see below)")
    ch.add_argument(
        "--concurrency",
        type=opt_int("--concurrency", 1, 32),
        default=None,
        metavar="K",
        help="trials run at once within a cell (default: 4)",
    )
    ch.add_argument(
        "--max-trials",
        type=opt_int("--max-trials", 1, 10000),
        default=None,
        metavar="M",
        help="sequential sampling's cap: an undecided verdict's cells get --trials more at a "
        "time up to M (default: 25; M = --trials turns it off)",
    )
    ch.add_argument(
        "--shard",
        default=None,
        metavar="K/N",
        help="run shard K of N: whole columns of the matrix, the same trials the unsharded run "
        "plans for them (same --seed); natively on ports + K*100 and a run folder of its own. "
        "Merge the N folders with lab merge",
    )
    ch.add_argument("--reports", default="reports", metavar="DIR", help="where run folders go")
    ch.set_defaults(func=run_chaos, long_running=True)


REPLAY_HELP = """\
Re-run one trial N times and say how often its failure comes back ("reproduced k/N"). The
replay line a run prints is the whole command; copy it. One command for both kinds of trial:

  the built-in service's (lab chaos, lab soak, lab window): its cell and seed
    lab replay --profile incident --fault latency:latency_ms=300 --refresh after_ack --seed 123
  an app's (lab investigate): its spec, the run's seed and the trial's id
    lab replay --target my-app.toml --seed 42 --trial e3-down-settled-01

Exit status: 0 reproduced at least once, 1 never (or, for an app's trial, no diagnosis drawn
again), 2 bad input.
"""


def _add_replay(sub: Any) -> None:
    from lab.plan.schedule import REFRESH_POINTS  # the valid names, in the help

    rp = sub.add_parser(
        "replay",
        help="re-run one trial N times: reproduced k/N",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=REPLAY_HELP,
    )
    cell = rp.add_argument_group("a trial of the built-in service (lab chaos's replay lines)")
    add_mode(cell)
    add_model(cell)
    cell.add_argument("--profile", help="correct, incident, incident-<defect> or a,b")
    cell.add_argument("--fault", help="e.g. none, latency:latency_ms=300")
    cell.add_argument("--refresh", help=f"the refresh point or send pattern: {', '.join(REFRESH_POINTS)}")
    cell.add_argument("--fault-turn", type=opt_int("--fault-turn", 1, 99), default=None)
    cell.add_argument(
        "--knob",
        action="append",
        default=[],
        metavar="NAME=MS",
        help="a window sweep's variable, as lab window's replay lines give it (refresh_delay_ms, tab_gap_ms)",
    )
    app = rp.add_argument_group("a trial of an app (lab investigate's replay lines)")
    app.add_argument("--target", metavar="FILE", help="the app's spec (TOML), as the run used it")
    app.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="sets", help="as the run had")
    app.add_argument("--trial", metavar="TRIAL_ID", help="the trial to replay, e.g. e3-down-settled-01")
    both = rp.add_argument_group("either")
    both.add_argument("--turns", type=opt_int("--turns", 1, 100), default=None, help="as the run had (5; an app's: 3)")
    both.add_argument("--seed", type=opt_int("--seed", 0, 2**31 - 1), required=True, help="as the replay line gives it")
    both.add_argument("--runs", type=opt_int("--runs", 1, 1000), default=5, help="how many times (default: 5)")
    both.add_argument("--reports", default="reports", metavar="DIR")
    rp.set_defaults(func=run_replay, long_running=True)


def _add_soak(sub: Any) -> None:
    so = sub.add_parser(
        "soak",
        help="the correct profile under every fault: 0/N with 95%% bounds",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=SOAK_HELP,
        epilog=SOAK_EPILOG,
    )
    add_mode(so)
    so.add_argument(
        "--trials",
        type=opt_int("--trials", 1, 1000),
        default=None,
        metavar="N",
        help="trials per cell (fault x refresh point; default: 15)",
    )
    so.add_argument(
        "--seed",
        type=opt_int("--seed", 0, 2**31 - 1),
        default=None,
        metavar="S",
        help="seed of the run's schedules (default: random, printed)",
    )
    so.add_argument(
        "--concurrency",
        type=opt_int("--concurrency", 1, 32),
        default=None,
        metavar="K",
        help="trials run at once under one fault (default: 16)",
    )
    so.add_argument("--reports", default="reports", metavar="DIR", help="where soak-<time>/<run-id>/ goes")
    so.set_defaults(func=run_soak, long_running=True)


def _seed(given: int | None) -> int:
    return given if given is not None else random.SystemRandom().randrange(1 << 31)


def run_chaos(args: argparse.Namespace) -> int:
    from lab.plan import shard
    from lab.commands.chaos import DEFAULT_MAX_TRIALS, DEFAULT_TRIALS, ChaosRun, build_matrix, check_modes, parse_only
    from lab.stack import for_mode
    from lab.stack.model_link import beside

    cells = build_matrix(parse_only(args.only))  # bad input: exit 2 before anything starts
    check_modes(cells, args.mode, args.model)
    part = shard.from_arg(args.shard)
    if part:
        shard.check_fits(part, cells)
        shard.use_own_stack(part, args.mode)
    seed, trials = _seed(args.seed), args.trials or DEFAULT_TRIALS
    max_trials = max(args.max_trials or DEFAULT_MAX_TRIALS, trials)
    print(
        f"lab chaos: {len(cells)} cells x {trials} trials, seed {seed} (replay the run with --seed {seed})"
        + (f", shard {part[0]}/{part[1]}" if part else ""),
        flush=True,
    )
    # The stack is reused if up and healthy, else started and stopped after; the stand-in with it.
    with for_mode(args.mode, model=args.model) as stack, beside(stack.cfg, stack.run_dir, args.model) as model:
        return ChaosRun(
            stack,
            cells,
            trials,
            seed,
            Path(args.reports),
            concurrency=args.concurrency or 4,
            mode=args.mode,
            max_trials=max_trials,
            shard=part,
            model=model,
        ).run()


def run_replay(args: argparse.Namespace) -> int:
    from lab.commands.replay import check_replay, replay
    from lab.stack import for_mode

    from lab.plan.knobs import parse_knob

    from lab.stack.model_link import beside

    if _replay_kind(args) == "app":
        from lab.cli.investigate import replay_trial

        return replay_trial(args.target, args.sets, args.turns or 3, args.seed, args.trial, args.runs, args.reports)
    check_replay(args.profile, args.fault, args.refresh, args.mode, args.model)  # bad input: exit 2 first
    knobs = tuple(parse_knob(k) for k in args.knob)
    with for_mode(args.mode, model=args.model) as stack, beside(stack.cfg, stack.run_dir, args.model) as model:
        return replay(
            stack,
            args.profile,
            args.fault,
            args.refresh,
            args.turns or 5,
            args.seed,
            args.fault_turn,
            args.runs,
            Path(args.reports),
            knobs=knobs,
            model=model,
        )


def _replay_kind(args: argparse.Namespace) -> str:
    """Which trial the options name -- the built-in service's cell or an app's trial -- whole, or
    a UsageError saying which options each kind needs."""
    from lab.common.errors import UsageError

    cell = {"--profile": args.profile, "--fault": args.fault, "--refresh": args.refresh}
    app = {"--target": args.target, "--trial": args.trial}
    kind = "app" if args.target is not None or args.trial is not None else "cell"
    missing = [k for k, v in (app if kind == "app" else cell).items() if v is None]
    foreign: list[str] = []
    if kind == "app":  # the cell's options, which an app's trial does not take
        foreign = [k for k, v in cell.items() if v is not None]
        foreign += [
            k for k, v in {"--fault-turn": args.fault_turn, "--knob": args.knob, "--model": args.model}.items() if v
        ]
        foreign += ["--mode"] if args.mode != "native" else []
    if missing or foreign:
        raise UsageError(
            f"missing {', '.join(missing)}" if missing else f"{', '.join(foreign)} with --target",
            "a built-in service's trial takes --profile, --fault, --refresh and --seed (lab chaos's replay "
            "line); an app's takes --target, --trial and --seed (lab investigate's replay line)",
        )
    return kind


def run_soak(args: argparse.Namespace) -> int:
    from lab.commands import soak
    from lab.stack import for_mode

    cells = soak.soak_matrix(args.mode)
    seed, trials = _seed(args.seed), args.trials or soak.DEFAULT_TRIALS
    print(
        f"lab soak: the correct profile, {len(cells)} cells x {trials} trials, seed {seed} "
        f"(replay the run with --seed {seed})",
        flush=True,
    )
    with for_mode(args.mode) as stack:
        return soak.run(
            stack, trials, seed, Path(args.reports), args.concurrency or soak.DEFAULT_CONCURRENCY, args.mode
        )


def run_merge(args: argparse.Namespace) -> int:
    from lab.commands import merge

    return merge.merge([Path(d) for d in args.dirs], Path(args.out))
