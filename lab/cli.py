"""`lab`: the command line of the chaos lab for LLM chat memory."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence

from lab.config import MODES
from lab.errors import LabError

DESCRIPTION = """\
The chaos lab for LLM chat memory: brings up Redis, the chat backend and Toxiproxy between
them, injects faults, and proves which defect makes a chat forget its history.

  lab up                  start the native stack (redis-server, toxiproxy-server, backend)
  lab status --json       what runs where
  lab down                stop everything the lab started (also after a killed `lab up`)

Ports and folders come from LAB_* variables (LAB_REDIS_PORT, LAB_CHAT_PROXY_PORT, LAB_RUN_DIR...).
"""


def _mode(value: str) -> str:
    if value not in MODES:
        raise argparse.ArgumentTypeError(f"unknown mode {value!r}; valid: {', '.join(MODES)}")
    return value


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

    st = sub.add_parser("status", help="what runs where (exit 0 when up, 3 when not)")
    st.add_argument("--mode", type=_mode, default="native", help=mode_help)
    st.add_argument("--json", action="store_true", help="print JSON")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return _run(args)
    except LabError as exc:
        print(f"lab {args.command}: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"lab {args.command}: interrupted", file=sys.stderr)
        return 130


def _run(args: argparse.Namespace) -> int:
    from lab.stack import for_mode

    stack = for_mode(args.mode)
    if args.command == "up":
        t0 = time.monotonic()
        if not args.json:
            print(f"lab up: starting the {args.mode} stack in {stack.cfg.run_dir} ...", flush=True)
        state = stack.up(timeout_s=args.timeout)  # type: ignore[call-arg]
        state["ready_after_s"] = round(time.monotonic() - t0, 2)
        if args.json:
            print(json.dumps(state, indent=2))
        else:
            verb = "already up (reused)" if state.get("reused") else f"ready in {state['ready_after_s']} s"
            print(f"lab up: {verb}")
            _print_endpoints(state["endpoints"])  # type: ignore[arg-type]
        return 0
    if args.command == "down":
        report = stack.down()
        print("lab down: " + ("; ".join(report) if report else "nothing was running"))
        return 0
    if args.command == "status":
        st = stack.status()
        if args.json:
            print(json.dumps(st, indent=2))
        else:
            print(f"{st['mode']} stack: {'up' if st['up'] else 'down'}"
                  + (" (healthy)" if st["healthy"] else ""))
            for name, svc in st["services"].items():  # type: ignore[union-attr]
                print(f"  {name:<10} pid {svc['pid'] or '-':<8} {'running' if svc['alive'] else 'stopped'}")
            _print_endpoints(st["endpoints"])  # type: ignore[arg-type]
        return 0 if st["up"] else 3
    raise AssertionError(args.command)


def _print_endpoints(endpoints: dict[str, str]) -> None:
    labels = {"chat": "chat page (browser, through toxiproxy)", "backend": "backend (direct)",
              "toxiproxy": "toxiproxy API", "redis": "redis (direct, for the checker)",
              "redis_proxy": "redis through toxiproxy (the backend's only address)"}
    for key, url in endpoints.items():
        print(f"  {labels.get(key, key):<52} {url}")


if __name__ == "__main__":
    sys.exit(main())
