"""`lab lesson [N]`: the lessons on async pitfalls -- list, run, --check, --reset, --replay."""

from __future__ import annotations

import argparse
import random
from pathlib import Path
from typing import Any

from lab.cli.common import add_model, opt_int
from lab.common.config import ROOT


def add(sub: Any) -> None:
    le = sub.add_parser(
        "lesson",
        help="lessons on async pitfalls: list, run, --check, --reset",
        description="Without N: list the lessons. With N: the story, an experiment "
        "on the real stack with its table, what to look for, the mechanism and its "
        "code. --check loads your exercise into the backend and runs the lesson's "
        "cell (>= 20 trials) under its fault: pass/fail with rates and intervals.",
    )
    le.add_argument("number", nargs="?", default=None, metavar="N", help="lesson number or slug")
    what = le.add_mutually_exclusive_group()
    what.add_argument("--check", action="store_true", help="check your exercise under the fault")
    what.add_argument("--reset", action="store_true", help="restore the exercise to its original")
    what.add_argument("--text", action="store_true", help="print the lesson without the experiment")
    what.add_argument("--window", action="store_true", help="draw the lesson's curve: when its defect loses")
    what.add_argument(
        "--replay",
        type=opt_int("--replay", 0, 2**31 - 1),
        default=None,
        metavar="SEED",
        help="re-run one trial of the check (from a failing check's replay line)",
    )
    le.add_argument(
        "--exercise",
        default=None,
        metavar="PATH",
        help="the exercise file to check (default: lessons/NN_<slug>/exercise.py)",
    )
    le.add_argument(
        "--trials",
        type=opt_int("--trials", 1, 1000),
        default=None,
        metavar="N",
        help="trials per cell (default: 20 for --check -- a pass needs 20 -- and 5 for the experiment)",
    )
    le.add_argument(
        "--seed",
        type=opt_int("--seed", 0, 2**31 - 1),
        default=None,
        metavar="S",
        help="seed of the trials (default: random, printed)",
    )
    le.add_argument(
        "--fault-turn",
        type=opt_int("--fault-turn", 1, 99),
        default=None,
        metavar="T",
        help="with --replay: the turn a one-send fault is armed before",
    )
    le.add_argument(
        "--runs",
        type=opt_int("--runs", 1, 1000),
        default=5,
        metavar="R",
        help="with --replay: how many times to run the trial (default: 5)",
    )
    add_model(le)
    le.add_argument("--reports", default="reports", metavar="DIR", help="where run folders go")
    le.set_defaults(func=run, long_running=True)


def run(args: argparse.Namespace) -> int:
    from lab.common.config import checkout

    checkout("lab lesson")
    from lab import lessons
    from lab.lessons import lines as suspect_lines

    if args.number is None:
        print("\n".join(lessons.catalogue()))
        print("\nlab lesson N: run one; lab lesson N --check: check your exercise; lab lesson N --reset: start over")
        return 0
    lesson = lessons.get(args.number)  # unknown: exit 2, listing the lessons
    given = Path(args.exercise) if args.exercise else None
    if args.reset:
        dest = lessons.reset(lesson, given)
        print(f"lab lesson {lesson.number}: {dest} restored from {lesson.pristine.relative_to(ROOT)}")
        return 0
    if args.window:
        return _window(lesson, args)
    if args.text:
        print(lessons.intro(lesson) + "\n\n" + suspect_lines.before(lesson) + "\n" + lessons.outro(lesson))
        return 0
    from lab.lessons import check

    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    reports = Path(args.reports)
    if args.replay is not None:
        return check.run_replay(lesson, given, args.replay, args.fault_turn, args.runs, reports, model=args.model)
    if args.check:
        return check.run_check(lesson, given, args.trials or lessons.MIN_TRIALS, seed, reports, model=args.model)
    print(lessons.intro(lesson) + "\n\n" + suspect_lines.before(lesson), flush=True)
    check.run_demo(lesson, args.trials or 5, seed, reports, model=args.model)
    print(lessons.outro(lesson))
    return 0


def _window(lesson: Any, args: argparse.Namespace) -> int:
    """The lesson's curve: `lab window` with the lesson's own sweep (its defect against the
    correct profile), into the same reports folder."""
    import shlex

    from lab.cli import window
    from lab.common.errors import UsageError

    if not lesson.window:
        raise UsageError(
            f"lesson {lesson.number} has no curve of its own",
            "lessons with one: " + ", ".join(str(x.number) for x in _with_window()),
        )
    argv = ["window", *shlex.split(lesson.window), "--reports", args.reports]
    argv += ["--seed", str(args.seed)] if args.seed is not None else []
    print(f"lab lesson {lesson.number} --window: lab {shlex.join(argv)}", flush=True)
    parser = argparse.ArgumentParser(prog="lab")
    window.add(parser.add_subparsers(dest="command"))
    window_args = parser.parse_args(argv)
    return int(window_args.func(window_args))


def _with_window() -> list[Any]:
    from lab.lessons.base import REGISTRY

    return [x for _, x in sorted(REGISTRY.items()) if x.window]
