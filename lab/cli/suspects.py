"""`lab suspects PATH...`: static suspects, each with the diagnosis that would prove it."""

from __future__ import annotations

import argparse
from typing import Any

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
  read_modify_write  the history read, changed in Python and written back whole (no WATCH)

  lab suspects services/chat
  lab suspects examples/foreign_app.py --json
Then prove or clear them: [source] paths = [...] in the app's target spec, and
lab investigate --target SPEC shows each diagnosis beside its lines (proven / not proven /
not exercised). Exit 0 after a scan (suspects are not findings), 2 for a path that does not
exist or a file that does not parse; non-Python files are skipped and counted.
"""


def add(sub: Any) -> None:
    sus = sub.add_parser(
        "suspects",
        help="static suspects: lines of a Python backend that may lose the "
        "conversation, each with the diagnosis that would prove it",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=SUSPECTS_HELP,
    )
    sus.add_argument("paths", nargs="+", metavar="PATH", help="files or folders of the backend's Python source")
    sus.add_argument("--json", action="store_true", help="print JSON (suspects and the checks' catalogue)")
    sus.add_argument("--no-ruff", action="store_true", help="the lab's own checks only (skip ruff's RUF006/ASYNC)")
    sus.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from lab import suspects
    from lab.suspects import show

    scan = suspects.scan(args.paths, use_ruff=not args.no_ruff)
    print(show.as_json(scan) if args.json else show.text(scan, " ".join(args.paths)))
    return 0
