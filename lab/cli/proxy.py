"""`lab proxy up --redis HOST:PORT | down | status`: Toxiproxy in front of a Redis the lab did not start."""

from __future__ import annotations

import argparse
import json
from typing import Any

PROXY_HELP = """\
For an app that already runs and that the lab cannot start: put the lab's Toxiproxy in front of
its Redis, give the app the address this prints (instead of its Redis's), and point
lab investigate at the running app with [start] external = true in its spec. The faults are
then Toxiproxy's (latency, drop, down, ...); the app's Redis and processes are not the lab's,
so pausing or restarting them is refused. lab proxy down stops the proxy (the app's Redis is
left as it is).

An app that calls a model: start it also with its SDK pointed at the address printed for the
model (e.g. OPENAI_BASE_URL). While lab investigate runs a spec with [model], the lab's stand-in
model answers there, behind the same Toxiproxy; the run stops at its contract check if the app's
send made no call to it.
"""

EPILOG = """\
examples:
  lab proxy up --redis 127.0.0.1:6379        then: REDIS_URL=redis://127.0.0.1:16380/0 your-app
                                            (a model app: OPENAI_BASE_URL=http://127.0.0.1:18411/v1 too)
  lab investigate --target my-app.toml      (its [start] says external = true)
  lab proxy status --json
  lab proxy down
"""


def add(sub: Any) -> None:
    px = sub.add_parser(
        "proxy",
        help="Toxiproxy in front of a Redis the lab did not start (an app that already runs)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=PROXY_HELP,
        epilog=EPILOG,
    )
    verbs = px.add_subparsers(dest="verb", required=True, metavar="up|down|status")
    up = verbs.add_parser("up", help="start the proxy in front of --redis HOST:PORT")
    up.add_argument("--redis", required=True, metavar="HOST:PORT", help="the app's Redis")
    verbs.add_parser("down", help="stop the proxy")
    st = verbs.add_parser("status", help="is it up, in front of what (exit 0 up, 3 not)")
    st.add_argument("--json", action="store_true")
    px.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from lab.common.config import LabConfig
    from lab.stack.proxy import RedisProxy

    proxy = RedisProxy(LabConfig.from_env())
    if args.verb == "up":
        got = proxy.up(args.redis)
        print(f"lab proxy: Toxiproxy in front of Redis at {got['upstream']}")
        print(f"  give your app: REDIS_URL={got['give_the_app']}  (its faults act there)")
        model = proxy.cfg.model_url
        print(
            f"  an app that calls a model: its SDK at {model} (e.g. OPENAI_BASE_URL={model}/v1, "
            f"ANTHROPIC_BASE_URL={model}, OLLAMA_HOST={model}): the stand-in answers there while "
            "lab investigate runs a spec with [model]"
        )
        print("  then: lab investigate --target SPEC, with [start] external = true; stop: lab proxy down")
        return 0
    if args.verb == "down":
        stopped = proxy.down()
        print("lab proxy: " + (f"stopped ({', '.join(stopped)})" if stopped else "no proxy was running"))
        return 0
    status = proxy.status()
    print(json.dumps(status) if args.json else ("up, in front of " + status["upstream"] if status["up"] else "down"))
    return 0 if status["up"] else 3
