"""`lab`: the command line of the chaos lab for LLM chat memory."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from lab.config import MODES, ROOT
from lab.errors import LabError, UsageError

if TYPE_CHECKING:
    from lab.stack import Stack

DESCRIPTION = """\
The chaos lab for LLM chat memory: brings up Redis, the chat backend and Toxiproxy between
them, injects faults, and proves which defect makes a chat forget its history.

  lab chaos               run the defect x fault matrix and say which defect causes the loss
                          (--mode compose: the same matrix on Docker Compose)
  lab replay ...          re-run one failing trial from its replay command
  lab soak                the correct profile under every fault and refresh point: 0/N + bounds
  lab report DIR          (re)write DIR/report.html from a run folder's results and artifacts
  lab bench               the lab's runner against a plain Playwright loop, seconds per trial
  lab investigate --target FILE   diagnose a chat backend you did not write (a black box)
  lab up                  start the native stack (redis-server, toxiproxy-server, backend)
  lab status --json       what runs where
  lab down                stop everything the lab started (also after a killed `lab up`)
  lab faults | defects    list the faults and the backend's defects
  lab lesson [N]          list the lessons on async pitfalls, or run lesson N (--check, --reset)

Ports and folders come from LAB_* variables (LAB_REDIS_PORT, LAB_CHAT_PROXY_PORT, LAB_RUN_DIR...).
"""


SUSPECTS_HELP = """\
Static suspects for the incident's mechanisms in a Python backend: each line with file:line,
the mechanism, and the diagnosis of `lab investigate` that would prove it. A suspect is not a
finding: linters flag every un-kept create_task, also the harmless ones; only an experiment
that draws the diagnosis proves the line. ruff does what it already checks (RUF006, ASYNC);
the lab's own AST checks (lab/suspects/, one module each) do the rest:
  dangling_task      a task nobody keeps or awaits (Flask: cancelled when the view returns)
  module_client      one redis.asyncio client shared across Flask's per-request loops
  session_cookie     the session cookie without max_age / expires
  ttl_conditional    EXPIRE only under an if (set once, or skipped)
  ttl_two_commands   the append and its EXPIRE as two commands
  retry_append       a non-idempotent append under a retrying client
  stream_end_save    a streamed turn stored after the token loop
  swallowed_error    a write's error logged and dropped, 2xx answered
  background_write   the write in a thread the answer does not wait for
  history_trim       LTRIM/XTRIM on the stored history
  history_cache      the history cached in process memory
  concurrent_writes  a turn's rows written by concurrent tasks

  lab suspects services/chat
  lab suspects examples/foreign_app.py --json
Then prove or clear them: [source] paths = [...] in the app's target spec, and
lab investigate --target SPEC shows each diagnosis beside its lines (proven / not proven /
not exercised). Exit 0 after a scan (suspects are not findings), 2 for a path that does not
exist or a file that does not parse; non-Python files are skipped and counted.
"""

INVESTIGATE_HELP = """\
Investigate a chat backend you did not write. The lab starts it as a real process (its spec
says how), gives it the lab's Redis -- always through Toxiproxy -- and chats with it from a real
Chromium, through a page the lab serves on the target's own origin (so cookies and refreshes are
real). It runs experiments (fault x refresh point x turns), then diagnoses causes, each with its
evidence: replies never stored, acknowledged while Redis was down, acknowledged faster than the
injected latency allows, duplicates after a connection drop, errors whose write was applied,
history reads failing (amnesia), stale reads, a TTL not renewed by writes or no TTL, a session
cookie lost at a browser restart, a capped history, a streamed turn stored only when its stream
completes, two tabs' turns overwriting each other (a lost update), a double click stored twice.

A correct app gets "no anomaly found" with the trial counts and the 95% upper bounds of what could
have been missed. Reports: reports/<run-id>/results.json, trials.json, report.html.

Exit status: 0 no anomaly found, 1 anomalies diagnosed, 2 bad input (spec, options, a target
that does not start or answers outside its spec), 3 unknown (an experiment exercised nothing),
130 / 143 / 129 interrupted by SIGINT / SIGTERM / SIGHUP (partial report written).
"""

INVESTIGATE_EPILOG = """\
experiments: none/settled (control), latency 300 ms/after_ack, one-shot drop of a Redis reply/
settled, Redis down for one send/settled, none/browser_restart; with a [stream] section also
none/mid_stream (the last reply cut after its first chunk); a long conversation with no fault
(max(12, 4 x --turns) turns: a capped history); opt-in: redis_restart.

examples:
  lab investigate --target examples/chat-service.toml
  lab investigate --target examples/chat-service.toml --set start.env.CHAT_DEFECTS=fire_and_forget
  lab investigate --target examples/foreign-app.toml      its own page, no ids, newest first
  lab investigate --target examples/foreign-app.toml --set start.env.FOREIGN_BUGS=cap_history
  lab investigate --target my-app.toml --trials 20 --turns 5     a full run: tighter bounds
  lab investigate --target my-app.toml --only 'mid_stream|down'  some experiments only

The spec format (TOML) is in README.md, section "lab investigate".
"""


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
  make soak                       about 9 minutes (TRIALS=15: 13 faults x 6 refresh points x 15)
  make soak TRIALS=50             300 trials per fault: bounds near 1 % per fault
  lab soak --trials 5 --seed 7    replayable: the seed fixes every trial's plan

Writes reports/soak-<time>/<run-id>/: soak.json (per cell and per fault: trials, unknown, lost,
duplicated, upper95), and the chaos run's results.json, junit.xml, report.html, failing trials.
"""


def _mode(value: str) -> str:
    if value not in MODES:
        raise argparse.ArgumentTypeError(f"unknown mode {value!r}; valid: {', '.join(MODES)}")
    return value


def _opt_int(flag: str, lo: int, hi: int) -> Callable[[str], int | None]:
    """An int option that also accepts '' (make passes empty variables) as "use the default"."""
    def conv(value: str) -> int | None:
        if value.strip() == "":
            return None
        try:
            n = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag}={value!r} is not an integer") from None
        if not lo <= n <= hi:
            raise argparse.ArgumentTypeError(f"{flag}={n} is out of range [{lo}, {hi}]")
        return n
    return conv


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lab", description=DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    mode_help = f"how the stack runs: {', '.join(MODES)} (default: native)"

    up = sub.add_parser("up", help="start the stack and wait until every service is ready",
                        description="Start Redis, Toxiproxy and the chat backend, wait for each "
                        "(Redis PING through Toxiproxy, Toxiproxy /version, backend /healthz), "
                        "print the endpoints and return; the services keep running. "
                        "A stack already up in the same run folder is reused.")
    up.add_argument("--mode", type=_mode, default="native", help=mode_help)
    up.add_argument("--json", action="store_true", help="print the state as JSON")
    up.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                    help="deadline for each service to become ready (default: 30)")

    down = sub.add_parser("down", help="stop and reap everything the lab started")
    down.add_argument("--mode", type=_mode, default="native", help=mode_help)

    ch = sub.add_parser("chaos", help="run the defect x fault matrix with verdicts (make chaos)",
                        formatter_class=argparse.RawDescriptionHelpFormatter,
                        description="Run each cell (defect profile x fault x refresh point x turns) "
                        "N times on the real stack, check every trial, and attribute the loss to a "
                        "defect with Wilson intervals. Writes reports/<run-id>/results.json and "
                        "junit.xml, keeps artifacts of failing trials, prints a replay command.",
                        epilog="ONLY filters or extends the matrix, terms separated by ';', values "
                        "by '|':\n  --only 'profile=incident|correct;refresh=after_ack;turns=5|15'\n"
                        "  --only 'fault=latency:latency_ms=800'\n"
                        "profiles: correct, incident, incident-<defect>, or defect names joined by ','")
    ch.add_argument("--mode", type=_mode, default="native", help=mode_help)
    ch.add_argument("--trials", type=_opt_int("--trials", 1, 1000), default=None, metavar="N",
                    help="trials per cell (default: 5)")
    ch.add_argument("--seed", type=_opt_int("--seed", 0, 2**31 - 1), default=None, metavar="S",
                    help="seed of the run's schedules (default: random, printed)")
    ch.add_argument("--only", default="", metavar="FILTER", help="filter/extend the matrix (see below)")
    ch.add_argument("--concurrency", type=_opt_int("--concurrency", 1, 32), default=None, metavar="K",
                    help="trials run at once within a cell (default: 4)")
    ch.add_argument("--max-trials", type=_opt_int("--max-trials", 1, 10000), default=None, metavar="M",
                    help="sequential sampling's cap: an undecided verdict's cells get --trials more at a "
                    "time up to M (default: 25; M = --trials turns it off)")
    ch.add_argument("--shard", default=None, metavar="K/N",
                    help="run shard K of N: whole columns of the matrix, the same trials the unsharded run "
                    "plans for them (same --seed); natively on ports + K*100 and a run folder of its own. "
                    "Merge the N folders with lab merge")
    ch.add_argument("--reports", default="reports", metavar="DIR", help="where run folders go")

    mg = sub.add_parser("merge", help="merge the shards of one lab chaos run into one verdict",
                        description="Cell counts add; Wilson intervals and verdicts are recomputed from "
                        "the merged counts; one results.json, junit.xml and report.html (failing trials' "
                        "artifacts linked from their shard folders). Shards of different seeds, matrices "
                        "or lab versions, a missing shard or one given twice are refused (exit 2). "
                        "Exit status as lab chaos: 0 valid run.",
                        epilog="  lab merge reports/*-shard1of3 reports/*-shard2of3 reports/*-shard3of3 "
                        "--out reports/merged")
    mg.add_argument("dirs", nargs="+", metavar="DIR", help="the shards' run folders (or their results.json)")
    mg.add_argument("--out", required=True, metavar="DIR", help="the merged run folder to write")

    from lab.schedule import REFRESH_POINTS  # the valid names, in the help

    rp = sub.add_parser("replay", help="re-run one trial N times: reproduced k/N")
    rp.add_argument("--mode", type=_mode, default="native", help=mode_help)
    rp.add_argument("--profile", required=True, help="correct, incident, incident-<defect> or a,b")
    rp.add_argument("--fault", required=True, help="e.g. none, latency:latency_ms=300")
    rp.add_argument("--refresh", required=True,
                    help=f"the refresh point or send pattern: {', '.join(REFRESH_POINTS)}")
    rp.add_argument("--turns", type=_opt_int("--turns", 1, 100), default=5)
    rp.add_argument("--seed", type=_opt_int("--seed", 0, 2**31 - 1), required=True)
    rp.add_argument("--fault-turn", type=_opt_int("--fault-turn", 1, 99), default=None)
    rp.add_argument("--runs", type=_opt_int("--runs", 1, 1000), default=5)
    rp.add_argument("--reports", default="reports", metavar="DIR")

    so = sub.add_parser("soak", help="the correct profile under every fault: 0/N with 95%% bounds",
                        formatter_class=argparse.RawDescriptionHelpFormatter,
                        description=SOAK_HELP, epilog=SOAK_EPILOG)
    so.add_argument("--mode", type=_mode, default="native", help=mode_help)
    so.add_argument("--trials", type=_opt_int("--trials", 1, 1000), default=None, metavar="N",
                    help="trials per cell (fault x refresh point; default: 15, about 9 minutes "
                    "on 2 cores; 50 gives 300 per fault)")
    so.add_argument("--seed", type=_opt_int("--seed", 0, 2**31 - 1), default=None, metavar="S",
                    help="seed of the run's schedules (default: random, printed)")
    so.add_argument("--concurrency", type=_opt_int("--concurrency", 1, 32), default=None, metavar="K",
                    help="trials run at once under one fault (default: 16)")
    so.add_argument("--reports", default="reports", metavar="DIR",
                    help="where soak-<time>/<run-id>/ goes")

    rep = sub.add_parser("report", help="(re)write report.html for a run folder",
                         description="Render DIR/report.html from DIR/results.json and the failing "
                         "trials' artifacts (DIR/trials/*): a self-contained page (no network).")
    rep.add_argument("dir", metavar="DIR", help="a run folder, e.g. reports/latest")

    be = sub.add_parser("bench", help="time the lab's runner against the plain Playwright loop",
                        formatter_class=argparse.RawDescriptionHelpFormatter,
                        description="On one native stack: the plain loop (tests/bench/plain, "
                        "pytest-repeat) and the lab's runner, on the correct and the incident "
                        "profile; prints seconds per trial, the ratios, 300 trials of the correct "
                        "cell, whether each defect shows in its exposing cell's first trial, and "
                        "the CPU split (browser, backend, runner, Redis+Toxiproxy).\n\n"
                        "  make bench                       defaults (about 10 minutes on 2 cores)\n"
                        "  lab bench --plain-runs 10 --trials 50   a quick look")
    be.add_argument("--plain-runs", type=_opt_int("--plain-runs", 1, 1000), default=None, metavar="N",
                    help="repetitions of the plain loop per profile, and lab trials of the incident (default 60)")
    be.add_argument("--trials", type=_opt_int("--trials", 1, 5000), default=None, metavar="N",
                    help="lab trials of the correct cell (default 300)")
    be.add_argument("--concurrency", type=_opt_int("--concurrency", 1, 32), default=None, metavar="K",
                    help="trials the lab runs at once (default 8)")
    be.add_argument("--reports", default="reports", metavar="DIR", help="where bench-<time>/ goes")
    le = sub.add_parser("lesson", help="lessons on async pitfalls: list, run, --check, --reset",
                        description="Without N: list the lessons. With N: the story, an experiment "
                        "on the real stack with its table, what to look for, the mechanism and its "
                        "code. --check loads your exercise into the backend and runs the lesson's "
                        "cell (>= 20 trials) under its fault: pass/fail with rates and intervals.")
    le.add_argument("number", nargs="?", default=None, metavar="N", help="lesson number or slug")
    what = le.add_mutually_exclusive_group()
    what.add_argument("--check", action="store_true", help="check your exercise under the fault")
    what.add_argument("--reset", action="store_true", help="restore the exercise to its original")
    what.add_argument("--text", action="store_true", help="print the lesson without the experiment")
    what.add_argument("--replay", type=_opt_int("--replay", 0, 2**31 - 1), default=None, metavar="SEED",
                      help="re-run one trial of the check (from a failing check's replay line)")
    le.add_argument("--exercise", default=None, metavar="PATH",
                    help="the exercise file to check (default: lessons/NN_<slug>/exercise.py)")
    le.add_argument("--trials", type=_opt_int("--trials", 1, 1000), default=None, metavar="N",
                    help="trials per cell (default: 20 for --check -- a pass needs 20 -- and 5 "
                    "for the experiment)")
    le.add_argument("--seed", type=_opt_int("--seed", 0, 2**31 - 1), default=None, metavar="S",
                    help="seed of the trials (default: random, printed)")
    le.add_argument("--fault-turn", type=_opt_int("--fault-turn", 1, 99), default=None, metavar="T",
                    help="with --replay: the turn a one-send fault is armed before")
    le.add_argument("--runs", type=_opt_int("--runs", 1, 1000), default=5, metavar="R",
                    help="with --replay: how many times to run the trial (default: 5)")
    le.add_argument("--reports", default="reports", metavar="DIR", help="where run folders go")

    inv = sub.add_parser("investigate", help="point the lab at any Redis-backed chat backend (a black box)",
                         formatter_class=argparse.RawDescriptionHelpFormatter,
                         description=INVESTIGATE_HELP, epilog=INVESTIGATE_EPILOG)
    inv.add_argument("--target", required=True, metavar="FILE",
                     help="the target spec (TOML), e.g. examples/chat-service.toml")
    inv.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="sets",
                     help="override a spec field, e.g. --set start.env.CHAT_DEFECTS=ttl_set_once "
                     "or --set http.port=18190 (repeatable)")
    inv.add_argument("--trials", type=_opt_int("--trials", 1, 1000), default=None, metavar="N",
                     help="trials per experiment (default 3; more trials = tighter bounds)")
    inv.add_argument("--turns", type=_opt_int("--turns", 2, 100), default=None, metavar="N",
                     help="turns per conversation (default 3)")
    inv.add_argument("--only", default="", metavar="EXPERIMENTS",
                     help="only experiments with these faults or refresh points, '|'-separated, e.g. "
                     "'down|mid_stream'; 'redis_restart' (opt-in) checks what a Redis without "
                     "persistence does to it")
    inv.add_argument("--seed", type=_opt_int("--seed", 0, (1 << 31) - 1), default=None, metavar="S",
                     help="the run's seed (printed; default: random): each trial's texts derive from it")
    inv.add_argument("--replay", default=None, metavar="TRIAL_ID",
                     help="run one trial's experiment again with its seed (--runs times) and say which "
                     "diagnoses it reproduces, e.g. --seed 42 --replay e3-down-settled-01 (the replay "
                     "line of a run prints the whole command)")
    inv.add_argument("--runs", type=_opt_int("--runs", 1, 1000), default=5, metavar="R",
                     help="with --replay: how many times (default: 5)")
    inv.add_argument("--concurrency", type=_opt_int("--concurrency", 1, 32), default=None, metavar="C",
                     help="trials at once, each in its own browser context (default 6); fault-free experiments "
                     "run side by side, one with a fault has the Redis link to itself")
    inv.add_argument("--reports", default="reports", metavar="DIR", help="where run folders go")

    sus = sub.add_parser("suspects", help="static suspects: lines of a Python backend that may lose the "
                         "conversation, each with the diagnosis that would prove it",
                         formatter_class=argparse.RawDescriptionHelpFormatter, description=SUSPECTS_HELP)
    sus.add_argument("paths", nargs="+", metavar="PATH", help="files or folders of the backend's Python source")
    sus.add_argument("--json", action="store_true", help="print JSON (suspects and the checks' catalogue)")
    sus.add_argument("--no-ruff", action="store_true", help="the lab's own checks only (skip ruff's RUF006/ASYNC)")

    sub.add_parser("faults", help="list the faults and their parameters")
    sub.add_parser("defects", help="list the backend's defects")

    st = sub.add_parser("status", help="what runs where (exit 0 when up, 3 when not)")
    st.add_argument("--mode", type=_mode, default="native", help=mode_help)
    st.add_argument("--json", action="store_true", help="print JSON")
    return p


# Commands that run long and start things: SIGINT, SIGTERM and SIGHUP all stop them as Ctrl-C
# does (trials stopped, partial report written, what they started stopped), exit 128 + N.
LONG_RUNNING = frozenset({"chaos", "replay", "soak", "bench", "investigate", "lesson", "up"})


def main(argv: Sequence[str] | None = None) -> int:
    from contextlib import nullcontext

    from lab import signals

    args = build_parser().parse_args(argv)
    try:
        with signals.interrupt_on() if args.command in LONG_RUNNING else nullcontext():
            return _run(args)
    except LabError as exc:
        print(f"lab {args.command}: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as exc:
        code = signals.exit_code(exc)
        print(f"lab {args.command}: interrupted by {signals.name(code - 128)} (exit {code}); "
              "what this run started has been stopped", file=sys.stderr)
        return code


def _run(args: argparse.Namespace) -> int:
    from lab.stack import for_mode

    if args.command == "faults":
        from lab.faults import REGISTRY
        import dataclasses
        for name, cls in sorted(REGISTRY.items()):
            params = ", ".join(f"{f.name}={f.default!r}" for f in dataclasses.fields(cls))
            only = f" [{'/'.join(cls.modes)} only]" if set(cls.modes) != set(MODES) else ""
            print(f"{name:<20} {cls.summary}{only}" + (f"\n{'':<20} params: {params}" if params else ""))
        return 0
    if args.command == "defects":
        from services.chat.defects import INCIDENT, REGISTRY as DEFECTS
        for d in DEFECTS.values():
            print(f"{d.name:<20} {d.summary}")
        print(f"\nincident profile: {','.join(INCIDENT)}")
        return 0
    if args.command == "report":
        from pathlib import Path

        from lab.report import html
        folder = Path(args.dir)
        if not (folder / "results.json").is_file():
            raise UsageError(f"{folder} has no results.json", "give a run folder, e.g. reports/latest")
        print(f"lab report: {html.write(folder)}")
        return 0
    if args.command == "merge":
        from pathlib import Path

        from lab import merge
        return merge.merge([Path(d) for d in args.dirs], Path(args.out))
    if args.command == "suspects":
        from lab import suspects
        from lab.suspects import show

        scan = suspects.scan(args.paths, use_ruff=not args.no_ruff)
        print(show.as_json(scan) if args.json else show.text(scan, " ".join(args.paths)))
        return 0
    if args.command == "bench":
        return _bench(args)
    if args.command == "lesson":
        return _lesson(args)
    if args.command == "investigate":
        return _investigate(args)
    if args.command == "chaos":
        from lab import shard

        args.shard = shard.from_arg(args.shard)
        if args.shard:
            _shard_env(args)
    stack = for_mode(args.mode)
    if args.command in ("chaos", "replay", "soak"):
        return _with_stack(stack, args)
    if args.command == "up":
        t0 = time.monotonic()
        if not args.json:
            print(f"lab up: starting the {args.mode} stack in {stack.run_dir} ...", flush=True)
        state = stack.up(timeout_s=args.timeout)
        state["ready_after_s"] = round(time.monotonic() - t0, 2)
        if args.json:
            print(json.dumps(state, indent=2))
        else:
            verb = "already up (reused)" if state.get("reused") else f"ready in {state['ready_after_s']} s"
            print(f"lab up: {verb}")
            _print_endpoints(state["endpoints"])
        return 0
    if args.command == "down":
        report = stack.down()
        if args.mode == "native":
            # Also what a killed `lab investigate` left (its own run folder: target, Redis, Toxiproxy).
            from lab.investigate.run import link_for
            report += [f"investigate: {r}" for r in link_for(stack.cfg).down()]
        print("lab down: " + ("; ".join(report) if report else "nothing was running"))
        return 0
    if args.command == "status":
        st = stack.status()
        if args.json:
            print(json.dumps(st, indent=2))
        else:
            print(f"{st['mode']} stack: {'up' if st['up'] else 'down'}"
                  + (" (healthy)" if st["healthy"] else ""))
            for name, svc in st["services"].items():
                print(f"  {name:<10} pid {svc['pid'] or '-':<8} {'running' if svc['alive'] else 'stopped'}")
            _print_endpoints(st["endpoints"])
        return 0 if st["up"] else 3
    raise AssertionError(args.command)


def _shard_env(args: argparse.Namespace) -> None:
    """Shard K runs beside the others: its own run folder (LAB_RUN_DIR + "-shardKofN") and lab
    ports (each LAB_*_PORT, or its default, + K * 100)."""
    import os

    from lab import shard
    from lab.config import PORT_ENV, LabConfig

    k, n = args.shard
    if args.mode != "native":
        return
    base = LabConfig.from_env()
    os.environ["LAB_RUN_DIR"] = f"{base.run_dir}-shard{k}of{n}"
    for name, env in PORT_ENV.items():
        os.environ[env] = str(base.ports[name] + k * shard.PORT_STRIDE)


def _with_stack(stack: Stack, args: argparse.Namespace) -> int:
    """Run chaos/replay on the stack, starting it if needed and stopping it after if we did."""
    import random
    from pathlib import Path

    from lab.chaos import DEFAULT_MAX_TRIALS, DEFAULT_TRIALS, ChaosRun, build_matrix, check_modes, parse_only, replay

    if args.command == "chaos":
        cells = build_matrix(parse_only(args.only))  # bad input: exit 2 before anything starts
        check_modes(cells, args.mode)
        seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
        trials = args.trials or DEFAULT_TRIALS
        max_trials = max(args.max_trials or DEFAULT_MAX_TRIALS, trials)
        if args.shard:
            from lab import shard
            k, n = args.shard
            columns = len({shard.column(c) for c in cells})
            if n > columns:
                raise UsageError(f"--shard {k}/{n}: the matrix has {columns} columns (fault / refresh / turns)",
                                 f"use at most {columns} shards, or widen the matrix with --only")
        print(f"lab chaos: {len(cells)} cells x {trials} trials, seed {seed} "
              f"(replay the run with --seed {seed})" + (f", shard {args.shard[0]}/{args.shard[1]}"
                                                       if args.shard else ""), flush=True)
    elif args.command == "soak":
        from lab import soak
        cells = soak.soak_matrix(args.mode)
        seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
        trials = args.trials or soak.DEFAULT_TRIALS
        print(f"lab soak: the correct profile, {len(cells)} cells x {trials} trials, seed {seed} "
              f"(replay the run with --seed {seed})", flush=True)
    else:
        from lab.schedule import REFRESH_POINTS, parse_fault, parse_profile
        from lab.faults import REGISTRY, check_mode
        parse_profile(args.profile)
        check_mode(REGISTRY[parse_fault(args.fault)[0]], args.mode)
        if args.refresh not in REFRESH_POINTS:
            raise UsageError(f"unknown refresh point {args.refresh!r}", f"valid: {', '.join(REFRESH_POINTS)}")
    with stack:  # reused if up and healthy, else started here and stopped after (lab.stack.lifecycle)
        if args.command == "soak":
            return soak.run(stack, trials, seed, Path(args.reports),
                            args.concurrency or soak.DEFAULT_CONCURRENCY, args.mode)
        if args.command == "chaos":
            return ChaosRun(stack, cells, trials, seed, Path(args.reports),
                            concurrency=args.concurrency or 4, mode=args.mode, max_trials=max_trials,
                            shard=args.shard).run()
        return replay(stack, args.profile, args.fault, args.refresh, args.turns, args.seed,
                      args.fault_turn, args.runs, Path(args.reports))


def _bench(args: argparse.Namespace) -> int:
    from pathlib import Path

    from lab.bench import Bench
    from lab.config import LabConfig
    from lab.stack.native import NativeStack

    with NativeStack(LabConfig.from_env()) as stack:  # the bench measures the native stack
        b = Bench(stack, out_root=Path(args.reports))
        b.plain_runs = args.plain_runs or b.plain_runs
        b.lab_trials = args.trials or b.lab_trials
        b.concurrency = args.concurrency or b.concurrency
        return b.run()


def _lesson(args: argparse.Namespace) -> int:
    import random
    from pathlib import Path

    from lab import lessons

    if args.number is None:
        print("\n".join(lessons.catalogue()))
        print("\nlab lesson N: run one; lab lesson N --check: check your exercise; "
              "lab lesson N --reset: start over")
        return 0
    lesson = lessons.get(args.number)  # unknown: exit 2, listing the lessons
    given = Path(args.exercise) if args.exercise else None
    if args.reset:
        dest = lessons.reset(lesson, given)
        print(f"lab lesson {lesson.number}: {dest} restored from {lesson.pristine.relative_to(ROOT)}")
        return 0
    if args.text:
        from lab.lessons import lines as suspect_lines

        print(lessons.intro(lesson) + "\n\n" + suspect_lines.before(lesson) + "\n" + lessons.outro(lesson))
        return 0
    from lab.lessons import check

    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    reports = Path(args.reports)
    if args.replay is not None:
        return check.run_replay(lesson, given, args.replay, args.fault_turn, args.runs, reports)
    if args.check:
        return check.run_check(lesson, given, args.trials or lessons.MIN_TRIALS, seed, reports)
    from lab.lessons import lines as suspect_lines

    print(lessons.intro(lesson) + "\n\n" + suspect_lines.before(lesson), flush=True)
    check.run_demo(lesson, args.trials or 5, seed, reports)
    print(lessons.outro(lesson))
    return 0


def _investigate(args: argparse.Namespace) -> int:
    from pathlib import Path

    from lab.config import LabConfig
    from lab.investigate import run, spec as spec_mod

    spec = spec_mod.load(Path(args.target), args.sets)  # bad spec: exit 2, nothing started
    wanted = {f.strip() for f in args.only.split("|") if f.strip()}
    if wanted:
        from lab.investigate.blackbox import default_plan, optional_plan
        plan = default_plan(3, streams=True, ids=True) + optional_plan(3)
        known = {e.fault for e in plan} | {e.refresh for e in plan}
        if wanted - known:
            raise UsageError(f"--only {args.only!r}: unknown experiment(s) {', '.join(sorted(wanted - known))}",
                             f"valid: faults {', '.join(sorted({e.fault for e in plan}))}; refresh points "
                             f"{', '.join(sorted({e.refresh for e in plan}))}")
        if "mid_stream" in wanted and spec.stream is None:
            raise UsageError(f"--only {args.only!r}: mid_stream needs a [stream] section in {args.target}",
                             "add [stream] with the request fields that make the answer stream, e.g. "
                             "request = { stream = true }")
    return run.run(spec, LabConfig.from_env(), args.trials or 3, args.turns or 3, Path(args.reports),
                   (lambda e: e.fault in wanted or e.refresh in wanted) if wanted else None,
                   seed=args.seed, sets=args.sets, replay=args.replay, runs=args.runs,
                   concurrency=args.concurrency or run.DEFAULT_CONCURRENCY)


def _print_endpoints(endpoints: dict[str, str]) -> None:
    labels = {"chat": "chat page (browser, through toxiproxy)", "backend": "backend (direct)",
              "toxiproxy": "toxiproxy API", "redis": "redis (direct, for the checker)",
              "redis_proxy": "redis through toxiproxy (the backend's only address)"}
    for key, url in endpoints.items():
        print(f"  {labels.get(key, key):<52} {url}")


if __name__ == "__main__":
    sys.exit(main())
