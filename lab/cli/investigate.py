"""`lab investigate --target SPEC`: a chat backend the lab did not write, as a black box."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from lab.cli.common import opt_int

INVESTIGATE_HELP = """\
Investigate a chat backend you did not write. The lab starts it as a real process (its spec
says how), gives it the lab's Redis -- always through Toxiproxy -- and chats with it from a real
Chromium, through a page the lab serves on the target's own origin (so cookies and refreshes are
real). It runs experiments (fault x refresh point x turns), then diagnoses causes, each with its
evidence: replies never stored, acknowledged while Redis was down, acknowledged faster than the
injected latency allows, duplicates after a connection drop, errors whose write was applied,
history reads failing (amnesia), stale reads, a TTL not renewed by writes or no TTL, a session
cookie lost at a browser restart, a capped history, a streamed turn stored only when its stream
completes, two tabs' turns overwriting each other (a lost update), a double click stored twice,
a write Redis refused answered as a success (an error swallowed, or a write left to a task).

An app that calls a model ([model] protocols = ["openai_chat"]) gets a stand-in model the lab
serves behind its own Toxiproxy link (OPENAI_BASE_URL and its kin set on the app's process); every
call is recorded and checked against the turns acknowledged before it: a model told less than the
user was shown while Redis held it is diagnosed, a fixed context window is reported as a design.

Where the app lives in its own compose file ([start] compose = "compose.yaml", service, redis_env
or redis_host, port), the lab starts that file, unedited, with Toxiproxy added in an override of
its own, and removes every container, network and volume it made. Where the app already runs
([start] external = true), `lab proxy up --redis HOST:PORT` puts Toxiproxy in front of its Redis.

A correct app gets "no anomaly found" with the trial counts and the 95% upper bounds of what could
have been missed. Reports: reports/<run-id>/results.json, trials.json, report.html.

Exit status: 0 no anomaly found, 1 anomalies diagnosed, 2 bad input (spec, options, a target
that does not start or answers outside its spec), 3 unknown (an experiment exercised nothing),
130 / 143 / 129 interrupted by SIGINT / SIGTERM / SIGHUP (partial report written).
"""

INVESTIGATE_EPILOG = """\
experiments: none/settled (control), latency 300 ms/after_ack, a one-shot drop of the reply to
a send's first write of the key (drop:at=write: a blind retry stores it twice)/settled, Redis
down for one send/settled, none/browser_restart; with a [stream] section also none/mid_stream
(the last reply cut after its first chunk); a long conversation with no fault (max(12, 4 x
--turns) turns: a capped history); latency 100 ms/two_tabs (the last two turns each sent from
two tabs at once: a lost update); where the API takes a message id, none/double_submit (the
last message sent twice at once); latency 300 ms/in_flight (reloaded inside the last send's
writes); latency 300 ms on the commands' way in/after_ack (a write the answer did not wait for);
Redis refusing one send's first write while it serves reads (write_refused:at=write)/settled, and
with a [stream] or [transport] the first write once the answer has begun (at=answer: a reply stored
after the user has it; "n/a" for an app that stores before it answers); with [model], the model
failing or its stream cut; opt-in: redis_restart, model_stall.

examples:
  lab investigate --target examples/chat-service.toml
  lab investigate --target examples/chat-service.toml --set start.env.CHAT_DEFECTS=fire_and_forget
  lab investigate --target examples/compose-app/lab.toml --only down --set start.env.APP_BUGS=swallow_errors
  lab investigate --target examples/foreign-app.toml      its own page, no ids, newest first
  lab investigate --target examples/foreign-app.toml --set start.env.FOREIGN_BUGS=cap_history
  lab investigate --target my-app.toml --trials 20 --turns 5     a full run: tighter bounds
  lab investigate --target my-app.toml --only 'mid_stream|down'  some experiments only
  lab investigate --target examples/fastapi-ws.toml       a login, ids in the URL, a WebSocket
  lab investigate --target examples/node-socketio.toml    Socket.IO, the id in a header

The spec format (TOML) is in docs/investigate.md, section "The target spec (TOML)"; sessions in
headers, query parameters and URLs, logins, WebSocket and Socket.IO: docs/app-shapes.md. A spec
drafted for you: lab init --start CMD --port N --out FILE. An app that already runs: lab proxy up.
"""


def add(sub: Any) -> None:
    inv = sub.add_parser(
        "investigate",
        help="point the lab at any Redis-backed chat backend (a black box)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=INVESTIGATE_HELP,
        epilog=INVESTIGATE_EPILOG,
    )
    inv.add_argument(
        "--target", required=True, metavar="FILE", help="the target spec (TOML), e.g. examples/chat-service.toml"
    )
    inv.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        dest="sets",
        help="override a spec field, e.g. --set start.env.CHAT_DEFECTS=ttl_set_once "
        "or --set http.port=18190 (repeatable)",
    )
    inv.add_argument(
        "--trials",
        type=opt_int("--trials", 1, 1000),
        default=None,
        metavar="N",
        help="judged trials per experiment (default 3; more trials = tighter bounds): a trial "
        "left unknown (a window the machine did not let it hit) is replaced by another, up to "
        "3 x N in all",
    )
    inv.add_argument(
        "--turns", type=opt_int("--turns", 2, 100), default=None, metavar="N", help="turns per conversation (default 3)"
    )
    inv.add_argument(
        "--only",
        default="",
        metavar="EXPERIMENTS",
        help="only experiments with these faults or refresh points, '|'-separated, e.g. "
        "'down|mid_stream'; a fault's parameters pin one of its rows, e.g. "
        "'write_refused:at=later' (the send's next write after its first); 'redis_restart' "
        "(opt-in) checks what a Redis without persistence does to it",
    )
    _run_options(inv)
    inv.set_defaults(func=run, long_running=True)


def _run_options(inv: argparse.ArgumentParser) -> None:
    """Seed, replay, concurrency, reports: how the run is made (the options above choose what)."""
    inv.add_argument(
        "--seed",
        type=opt_int("--seed", 0, (1 << 31) - 1),
        default=None,
        metavar="S",
        help="the run's seed (printed; default: random): each trial's texts derive from it",
    )
    # One trial again: lab replay --target FILE --seed S --trial ID (the run's replay lines); these
    # two stay, unlisted, for the lines of reports written before lab replay took an app's trial.
    inv.add_argument("--replay", default=None, metavar="TRIAL_ID", help=argparse.SUPPRESS)
    inv.add_argument("--runs", type=opt_int("--runs", 1, 1000), default=5, metavar="R", help=argparse.SUPPRESS)
    inv.add_argument(
        "--concurrency",
        type=opt_int("--concurrency", 1, 32),
        default=None,
        metavar="C",
        help="trials at once, each in its own browser context (default 6); fault-free experiments "
        "run side by side (a trial that only waits for the history to settle lets the next one "
        "start), one with a fault has the Redis link to itself -- or shares it with those of the "
        "same fault (after_ack and in_flight: C trials of each at once)",
    )
    inv.add_argument("--reports", default="reports", metavar="DIR", help="where run folders go")


def run(args: argparse.Namespace) -> int:
    from lab.common.config import LabConfig
    from lab.investigate.run import experiments, investigation
    from lab.investigate.spec import parse as spec_mod

    spec = spec_mod.load(Path(args.target), args.sets)  # bad spec: exit 2, nothing started
    only = experiments.only_filter(spec, args.only, args.target)  # bad --only: exit 2 too
    return investigation.run(
        spec,
        LabConfig.from_env(),
        args.trials or 3,
        args.turns or 3,
        Path(args.reports),
        only,
        seed=args.seed,
        sets=args.sets,
        replay=args.replay,
        runs=args.runs,
        concurrency=args.concurrency or investigation.DEFAULT_CONCURRENCY,
    )


def replay_trial(target: str, sets: list[str], turns: int, seed: int, trial: str, runs: int, reports: str) -> int:
    """`lab replay --target FILE --seed S --trial ID`: one trial of an investigation run again
    ``runs`` times with its seed; which diagnoses it reproduces."""
    from lab.common.config import LabConfig
    from lab.investigate.run import investigation
    from lab.investigate.spec import parse as spec_mod

    spec = spec_mod.load(Path(target), sets)  # bad spec: exit 2, nothing started
    return investigation.run(
        spec, LabConfig.from_env(), runs, turns, Path(reports), seed=seed, sets=sets, replay=trial, runs=runs
    )
