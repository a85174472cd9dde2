"""`lab up`, `lab down`, `lab status`: the stack by hand."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from lab.cli.common import add_mode, print_endpoints


def add(sub: Any) -> None:
    up = sub.add_parser(
        "up",
        help="start the stack and wait until every service is ready",
        description="Start Redis, Toxiproxy and the chat backend, wait for each "
        "(Redis PING through Toxiproxy, Toxiproxy /version, backend /healthz), "
        "print the endpoints and return; the services keep running. "
        "A stack already up in the same run folder is reused.",
    )
    add_mode(up)
    up.add_argument("--json", action="store_true", help="print the state as JSON")
    up.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="deadline for each service to become ready (default: 30)",
    )
    up.set_defaults(func=run_up, long_running=True)

    down = sub.add_parser("down", help="stop and reap everything the lab started")
    add_mode(down)
    down.set_defaults(func=run_down)

    st = sub.add_parser("status", help="what runs where (exit 0 when up, 3 when not)")
    add_mode(st)
    st.add_argument("--json", action="store_true", help="print JSON")
    st.set_defaults(func=run_status)


def run_up(args: argparse.Namespace) -> int:
    from lab.stack import for_mode

    stack = for_mode(args.mode)
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
        print_endpoints(state["endpoints"])
    return 0


def run_down(args: argparse.Namespace) -> int:
    from lab.stack import for_mode

    stack = for_mode(args.mode)
    report = stack.down()
    if args.mode == "native":
        # Also what a killed `lab investigate` left (its own run folder: target, Redis, Toxiproxy).
        from lab.investigate.run.investigation import link_for

        report += [f"investigate: {r}" for r in link_for(stack.cfg).down()]
        from lab.stack.compose.app import AppStack

        app = AppStack.left_behind(stack.cfg, link_for(stack.cfg).run_dir)  # an app's compose project
        report += [f"investigate: {r}" for r in app.down()] if app is not None else []
        from lab.stack.proxy import RedisProxy

        report += [f"proxy: {r}" for r in RedisProxy(stack.cfg).down()]  # `lab proxy up`'s, if any
    from lab.common.files import sweep_tmp
    from lab.driver.browser import TMP_PREFIX

    from lab.investigate.target.process import TMP_PREFIX as TARGET_TMP

    report += [f"browser temp folder {r}" for r in sweep_tmp(TMP_PREFIX)]  # a killed run's
    report += [f"target temp folder {r}" for r in sweep_tmp(TARGET_TMP)]
    print("lab down: " + ("; ".join(report) if report else "nothing was running"))
    return 0


def run_status(args: argparse.Namespace) -> int:
    from lab.stack import for_mode

    st = for_mode(args.mode).status()
    if args.json:
        print(json.dumps(st, indent=2))
    else:
        print(f"{st['mode']} stack: {'up' if st['up'] else 'down'}" + (" (healthy)" if st["healthy"] else ""))
        for name, svc in st["services"].items():
            print(f"  {name:<10} pid {svc['pid'] or '-':<8} {'running' if svc['alive'] else 'stopped'}")
        print_endpoints(st["endpoints"])
    return 0 if st["up"] else 3
