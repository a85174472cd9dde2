"""Running lessons on the real stack: the demo experiment, `--check` of an exercise, `--replay`.

Every run brings up its own native stack (run folder ``.lab/run/lesson`` and ports of its own,
so a `make up` stack is left alone), with the exercise file loaded into the backend when there
is one, and stops it afterwards whatever happened. Trials go through the lab's Runner, checker
and Wilson intervals like any `lab chaos` cell.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from lab.model.attribution import CellStats, cell_stats
from lab.commands.chaos import Progress
from lab.common.config import DEFAULT_PORTS, PORT_ENV, ROOT, LabConfig, home
from lab.lessons import MIN_TRIALS, Lesson
from lab.lessons.judge import MIN_ACK_RATIO, Judgement, describe, judge, problems  # noqa: F401  (lab lesson --check)
from lab.lessons.validate import validate
from lab.report import table
from lab.model.outcome import CellOutcome, TrialOutcome
from lab.model.stats import fmt_rate
from lab.runner.runner import Runner
from lab.plan import ids
from lab.plan.schedule import Cell, TrialPlan, fault_text, plan_cell, plan_trial
from lab.common.signals import interrupt_on
from lab.report.model_side import model_side
from lab.stack.model_link import ModelLink, backend_env, beside
from lab.stack.native import NativeStack

PORT_OFFSET = 200  # lesson stacks default to the lab's ports + 200


def lesson_config(env: dict[str, str] | None = None) -> LabConfig:
    """Ports from LAB_*_PORT when set, else the defaults + 200; run folder LAB_LESSON_RUN_DIR."""
    env = dict(os.environ if env is None else env)
    for name, port in DEFAULT_PORTS.items():
        env.setdefault(PORT_ENV[name], str(port + PORT_OFFSET))
    env.pop("LAB_RUN_DIR", None)
    run_dir = Path(env.get("LAB_LESSON_RUN_DIR", home(env) / "run" / "lesson")).resolve()
    return LabConfig.from_env(env, run_dir=run_dir)


def replay_command(lesson: Lesson, t: TrialOutcome, exercise: Path | None) -> str:
    assert t.plan is not None  # a lesson's trials are planned
    args = [".venv/bin/lab", "lesson", str(lesson.number), "--replay", str(t.plan.seed)]
    if t.plan.fault_turn:
        args += ["--fault-turn", str(t.plan.fault_turn)]
    if exercise is not None:
        args += ["--exercise", _shown(exercise)]
    if t.model:
        args.append("--model")
    return " ".join(args + ["--runs", "5"])


def _shown(p: Path) -> str:
    try:
        return str(p.resolve().relative_to(ROOT))
    except ValueError:
        return str(p)


# ------------------------------------------------------------------ the stack and the runs
@contextmanager
def lesson_stack(exercise: Path | None, model: bool = False) -> Iterator[tuple[NativeStack, ModelLink | None]]:
    """Up with the exercise loaded (if any) and, with ``model``, the backend's replies from the
    stand-in model; down on the way out -- also on Ctrl-C, SIGTERM or SIGHUP (the CLI handles
    them too; this covers callers that are not the CLI)."""
    cfg = lesson_config()
    env = {"CHAT_LAB_EXERCISE": str(exercise.resolve())} if exercise is not None else {}
    if model:
        env.update(backend_env(cfg))
    stack = NativeStack(cfg, backend_env=env)

    with interrupt_on():
        try:
            stack.up()
            with beside(cfg, stack.run_dir, model) as link:
                yield stack, link
        finally:
            stack.down()


def exercise_error(log: Path, offset: int, exercise: Path) -> str | None:
    """The last error the backend raised inside the exercise during this run (its log from
    ``offset``), as "file:line: error" -- a trainee's runtime error, pointed at like a syntax error."""
    try:
        lines = log.read_bytes()[offset:].decode(errors="replace").splitlines()
    except OSError:
        return None
    found = None
    for i, line in enumerate(lines):
        m = re.search(r'File "(.+?)", line (\d+)', line)
        if m and Path(m.group(1)).resolve() == exercise.resolve():
            error = next((x for x in lines[i + 1 :] if x and not x.startswith(" ")), "?")
            found = f"{exercise}:{m.group(2)}: {error}"
    return found


def _log_size(stack: NativeStack) -> int:
    try:
        return stack.backend_log.stat().st_size
    except OSError:
        return 0


FIRST_ROUND = 4  # trials run side by side (the runner's concurrency): a check's first round


def _run(
    stack: NativeStack, cells: list[tuple[Cell, list[Any]]], out_dir: Path, model: ModelLink | None = None
) -> list[CellOutcome]:
    progress = Progress(sum(len(p) for _, p in cells))
    try:
        return Runner(stack, out_dir, concurrency=FIRST_ROUND, on_trial=progress.trial, model=model).run(cells)
    finally:
        progress.close()


def _out_dir(reports: Path, lesson: Lesson, what: str) -> Path:
    return reports / f"lesson-{lesson.name}-{what}-{time.strftime('%Y%m%d-%H%M%S')}"


def exercise_file(lesson: Lesson, given: Path | None) -> tuple[Path, dict[str, Any]]:
    """The exercise to load, validated in a child process before anything starts."""
    path = (given or lesson.exercise).resolve()
    return path, validate(lesson.kind, path, lesson.number)


def run_check(
    lesson: Lesson,
    given: Path | None,
    trials: int,
    seed: int,
    reports: Path,
    out: TextIO = sys.stdout,
    model: bool = False,
) -> int:
    path, probe = exercise_file(lesson, given)
    cell = lesson.check_cell(durable=probe.get("durable"))
    print(
        f"lab lesson {lesson.number} --check: {_shown(path)}\n"
        f"  cell {fault_text(cell.fault, cell.params)} / {cell.refresh} / {cell.turns} turns, "
        f"{trials} trials, seed {seed}",
        file=out,
        flush=True,
    )
    if lesson.kind == "config":
        print(
            f"  DURABLE = {probe['durable']}: redis_restart with durable={str(probe['durable']).lower()}",
            file=out,
            flush=True,
        )
    out_dir = _out_dir(reports, lesson, "check")
    with lesson_stack(path if lesson.kind == "behaviour" else None, model) as (stack, link):
        offset = _log_size(stack)
        outcome = _sample(lesson, stack, cell, trials, seed, out_dir, link)
    j = judge(lesson, outcome, max(trials, MIN_TRIALS))  # fewer trials can fail, never pass
    crash = exercise_error(stack.backend_log, offset, path) if lesson.kind == "behaviour" else None
    st = cell_stats(outcome)
    lines = ["", table([st]), *_model_line([outcome]), "", *j.lines[:1], *(f"  {x}" for x in j.lines[1:])]
    if j.example is not None:
        lines += [
            f"  example: {describe(j.example)}",
            f"  artifacts: {_shown(j.example.artifacts) if j.example.artifacts else '(none)'}",
            f"  replay: {replay_command(lesson, j.example, path)}",
        ]
    if crash:
        lines.append(f"  the backend raised in your exercise: {crash}")
    from lab.lessons import lines as suspect_lines

    lines += suspect_lines.after_check(lesson, path, j.passed, st.trials)  # judged trials only
    if not j.passed and lesson.fix_hint:
        lines.append(f"  next: {lesson.fix_hint} in {_shown(path)}; the story: lab lesson {lesson.number}")
    print("\n".join(lines), file=out)
    _write(
        out_dir,
        lesson,
        [st],
        {
            "exercise": str(path),
            "seed": seed,
            "passed": j.passed,
            "judgement": j.lines,
            "replay": replay_command(lesson, j.example, path) if j.example else None,
        },
    )
    return 0 if j.passed else 1


def plans_for(lesson: Lesson, cell: Cell, n: int, seed: int, prefix: str) -> list[TrialPlan]:
    """The cell's plans; a lesson that fixes its fault turn gets it in every trial."""
    if lesson.fault_turn is None:
        return plan_cell(cell, n, seed, prefix=prefix)
    return [plan_trial(cell, ids.trial_seed(seed, i), ids.trial_id(prefix, i), lesson.fault_turn) for i in range(n)]


def _sample(
    lesson: Lesson, stack: NativeStack, cell: Cell, trials: int, seed: int, out_dir: Path, model: ModelLink | None
) -> CellOutcome:
    """``trials`` trials with a verdict: trials left unknown (a precondition not met on a loaded
    machine) are replaced, up to twice as many in all; a forbidden anomaly ends it at once. The
    first round is one batch of the runner's (FIRST_ROUND trials side by side): an exercise
    still wrong usually shows it there and is told so in a quarter of the time, while a pass
    costs the same batches as before (4 + 16 trials, 5 batches of 4, like 20)."""
    outcome = CellOutcome(cell)
    for round_no in range(1, 10):
        known = [t for t in outcome.trials if t.result.validity != "unknown"]
        want = min(trials - len(known), 2 * trials - len(outcome.trials))
        if want <= 0 or any(problems(lesson, t) for t in known):
            break
        if round_no == 1:
            want = min(want, FIRST_ROUND)
        plans = plans_for(lesson, cell, want, ids.group_seed(seed, cell.cell_id, round_no), prefix=f"k{round_no}-")
        got = _run(stack, [(cell, plans)], out_dir, model)[0]
        outcome.trials += got.trials
        outcome.fault_error = outcome.fault_error or got.fault_error
        outcome.fault_evidence = outcome.fault_evidence or got.fault_evidence
    return outcome


def run_demo(
    lesson: Lesson, trials: int, seed: int, reports: Path, out: TextIO = sys.stdout, model: bool = False
) -> int:
    cells = lesson.demo_cells()
    print(f"\nThe experiment: {trials} trials per profile on the real stack, seed {seed} ...", file=out, flush=True)
    out_dir = _out_dir(reports, lesson, "demo")
    with lesson_stack(None, model) as (stack, link):
        outcomes = _run(
            stack,
            [
                (c, plans_for(lesson, c, trials, ids.group_seed(seed, c.cell_id), prefix=f"d{i}-"))
                for i, c in enumerate(cells)
            ],
            out_dir,
            link,
        )
    stats = [cell_stats(o) for o in outcomes]
    print("\n".join(["", table(stats), *_model_line(outcomes)]), file=out)
    failing = [t for o in outcomes for t in o.trials if t.failed]
    if failing:
        print(
            f"\nA failing trial: {describe(failing[0])}\n  artifacts: "
            f"{_shown(failing[0].artifacts) if failing[0].artifacts else '(none)'}\n"
            f"  replay: {failing[0].replay_command()}",
            file=out,
        )
    _write(out_dir, lesson, stats, {"seed": seed})
    return 0


def run_replay(
    lesson: Lesson,
    given: Path | None,
    seed: int,
    fault_turn: int | None,
    runs: int,
    reports: Path,
    out: TextIO = sys.stdout,
    model: bool = False,
) -> int:
    path, probe = exercise_file(lesson, given)
    cell = lesson.check_cell(durable=probe.get("durable"))
    plans = [
        plan_trial(cell, seed, ids.trial_id("replay-", i, width=2), fault_turn or lesson.fault_turn)
        for i in range(runs)
    ]
    with lesson_stack(path if lesson.kind == "behaviour" else None, model) as (stack, link):
        outcome = _run(stack, [(cell, plans)], _out_dir(reports, lesson, "replay"), link)[0]
    bad = [t for t in outcome.trials if problems(lesson, t)]
    print(f"lesson {lesson.number}, {_shown(path)}, seed {seed}: reproduced {len(bad)}/{runs}", file=out)
    for t in bad[:1]:
        print(f"  {describe(t)}", file=out)
    return 0 if bad else 1


def _model_line(outcomes: list[CellOutcome]) -> list[str]:
    """With the stand-in (--model): what the model was told, per profile, beside what the page
    showed (the table above)."""
    if not any(t.model for o in outcomes for t in o.trials):
        return []
    lines = ["The model's side:"]
    for o in outcomes:
        st = cell_stats(o)
        lines.append(f"  {o.cell.profile:<14} told less than acknowledged in {fmt_rate(*st.rate('told_less'))} trials")
    what = model_side([t for o in outcomes for t in o.trials])["what"]
    return lines + [f"  {what}." if what else ""]


def _write(out_dir: Path, lesson: Lesson, stats: list[CellStats], extra: dict[str, Any]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.json").write_text(
        json.dumps(
            {"lesson": lesson.number, "slug": lesson.slug, **extra, "cells": [s.as_json() for s in stats]}, indent=2
        )
        + "\n"
    )
