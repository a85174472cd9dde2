"""`lab init`: draft a target spec for an app you did not write, and check it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

INIT_HELP = """\
Draft a target spec (TOML) for lab investigate, for a chat app you did not write. The lab starts
the app as lab investigate would (your command, the lab's Redis through Toxiproxy in its
environment) and probes it: its OpenAPI document where it serves one (FastAPI: /openapi.json),
else the routes its own page at / calls (read from its scripts), then common routes (POST /chat,
/api/chat, /api/send ...; GET /history, /api/messages ...).
One real message and one history read then fix the reply's field, the history's shape and
order, whether the answer streams and its own last event, the session (a cookie the app sets,
an id from a create call or from the first answer, or one the page mints itself) and the Redis
key named after it. A login found in OpenAPI takes its values from environment variables
(LAB_LOGIN_<FIELD>): set them before the run. An app whose --env or named source file names a
model SDK (OPENAI_BASE_URL, `from openai`, anthropic, ollama) gets [model]: the probe's messages
then go to the lab's stand-in model, not to a real provider.

The spec is written with the evidence of every value, and what could not be inferred is left
as a line marked COULD NOT INFER -- or, at a terminal (or with --ask), asked one question each.
Then the draft, unedited, goes through lab investigate's contract check (one send, one read).

Exit status: 0 written and the contract check passed, 1 written and the check failed (the line
says why), 2 bad input (an option; an app that does not start), 3 written with values it could
not infer (named; give them, then run again with --check-only).
"""

INIT_EPILOG = """\
examples:
  lab init --start "{python} examples/foreign_app.py" --port 18191 --out my-app.toml
  LAB_LOGIN_USERNAME=ada LAB_LOGIN_PASSWORD=... lab init --start "{python} examples/fastapi_chat.py" \\
      --port 18193 --out fastapi.toml          (the app's own CHAT_USER / CHAT_PASSWORD as well)
  lab init --start "{python} -m gunicorn -b 127.0.0.1:{port} services.chat.wsgi:app" --port 18190 \\
      --env CHAT_REDIS_URL={redis_url} --out chat.toml
  lab init --compose examples/compose-app/compose.yaml --service app --container-port 3000 \\
      --port 18301 --out compose-app.toml        an app in its own compose file, started unedited
  lab init --check-only --out my-app.toml       check a spec you edited

The app gets REDIS_URL={redis_url} and PORT={port} unless --env says otherwise; placeholders
as in a spec: {python} {redis_url} {redis_host} {redis_port} {port} {cwd} {spec_dir}.
With --compose, the app runs as its compose file says (a Docker engine: DOCKER_HOST, the
system's, or as root the lab's own), with the lab's Toxiproxy routed in by REDIS_URL (or
--redis-env NAME / --redis-host NAME) and its port published at --port; --env adds to the
backend's environment.
"""


def _env(item: str) -> tuple[str, str]:
    name, eq, value = item.partition("=")
    if not eq or not name.strip():
        raise argparse.ArgumentTypeError(f"--env {item!r} is not NAME=VALUE, e.g. --env REDIS_URL={{redis_url}}")
    return name.strip(), value


def add(sub: Any) -> None:
    from lab.cli.common import opt_int

    ini = sub.add_parser(
        "init",
        help="draft a target spec for an app you did not write, and check it",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=INIT_HELP,
        epilog=INIT_EPILOG,
    )
    ini.add_argument("--start", metavar="COMMAND", help="how to start the app (a shell-style command line)")
    ini.add_argument("--port", type=opt_int("--port", 1024, 65535), metavar="N", help="the port the app listens on")
    ini.add_argument(
        "--out",
        default="lab.toml",
        metavar="FILE",
        help="the spec to write (default: lab.toml; never overwritten without --force)",
    )
    ini.add_argument("--cwd", default=".", metavar="DIR", help="where the command runs (default: here)")
    app = ini.add_argument_group("an app in its own compose file (instead of --start)")
    app.add_argument("--compose", metavar="FILE", help="the app's compose file (never written)")
    app.add_argument("--service", metavar="NAME", help="the backend's service in it")
    app.add_argument(
        "--container-port",
        type=opt_int("--container-port", 1, 65535),
        metavar="N",
        help="its port inside the container",
    )
    app.add_argument("--redis-service", default="redis", metavar="NAME", help="the Redis service (default: redis)")
    route = app.add_mutually_exclusive_group()
    route.add_argument(
        "--redis-env", metavar="NAME", help="the variable the backend reads Redis's address from (default: REDIS_URL)"
    )
    route.add_argument("--redis-host", metavar="NAME", help="or the host name it dials (Toxiproxy takes it over)")
    ini.add_argument("--name", default=None, help="the target's name (default: the file's stem)")
    ini.add_argument(
        "--env", action="append", default=[], type=_env, metavar="NAME=VALUE", help="the app's environment (repeatable)"
    )
    ini.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    ini.add_argument(
        "--ask",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="ask what the probe could not infer, one question each (default: when stdin is a terminal)",
    )
    ini.add_argument("--no-check", action="store_true", help="write the draft, skip the contract check")
    ini.add_argument("--check-only", action="store_true", help="only check FILE (a spec you edited)")
    ini.set_defaults(func=run, long_running=True)


def run(args: argparse.Namespace) -> int:
    from lab.common.config import LabConfig
    from lab.common.errors import UsageError
    from lab.investigate.draft.init import Init

    out = Path(args.out)
    if args.check_only:
        return Init("", 0, out, Path("."), out.stem).contract(LabConfig.from_env())
    if bool(args.start) == bool(args.compose) or args.port is None:
        raise UsageError(
            "lab init needs --port N and either --start COMMAND or --compose FILE (or --check-only)",
            "see lab init --help",
        )
    compose = _compose(args, out) if args.compose else None
    if out.exists() and not args.force:
        raise UsageError(f"{out} exists", "give another --out, or --force to overwrite it")
    cwd = Path(args.cwd)
    if not cwd.is_dir():
        raise UsageError(f"--cwd {args.cwd!r} is not a folder", "give the folder the command runs in")
    ask = sys.stdin.isatty() if args.ask is None else args.ask
    init = Init(
        args.start or "", args.port, out, cwd.resolve(), args.name or out.stem, dict(args.env), not args.no_check, ask,
        compose=compose,
    )  # fmt: skip
    return init.run(LabConfig.from_env())


def _compose(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """[start]'s compose keys from the flags (lab.investigate.spec.compose checks them)."""
    import os

    from lab.common.errors import UsageError

    file = Path(args.compose)
    if not file.is_file():
        raise UsageError(f"--compose {args.compose!r}: no such file", "give the app's compose file")
    if not args.service or args.container_port is None:
        raise UsageError(
            "--compose needs --service NAME and --container-port N", "e.g. --service app --container-port 3000"
        )
    route = {"redis_host": args.redis_host} if args.redis_host else {"redis_env": args.redis_env or "REDIS_URL"}
    return {
        "compose": os.path.relpath(file.resolve(), out.resolve().parent),
        "service": args.service,
        "redis_service": args.redis_service,
        **route,
        "port": args.container_port,
    }
