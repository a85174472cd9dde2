"""`lab`: the command line of the chaos lab for LLM chat memory -- one module per subcommand
(each adds its parser and sets ``func``; the domain modules validate their own input).

May import: any room (it is the top: nothing imports it but lab/__main__.py).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from contextlib import nullcontext

from lab.cli import bench, catalogue, chaos, doctor, init, investigate, k8s, lesson, proxy, stack, suspects, window
from lab.common import redact
from lab.common.errors import LabError

DESCRIPTION = """\
The chaos lab for LLM chat memory: brings up Redis, the chat backend and Toxiproxy between
them, injects faults, and proves which defect makes a chat forget its history.

  lab doctor              what a run needs on this machine; lab setup installs it
  lab init --start CMD --port N   draft the spec of your app (a chat backend you did not write)
  lab investigate --target FILE   diagnose it: which defect loses its conversation
  lab chaos               run the defect x fault matrix and say which defect causes the loss
                          (--mode compose: the same matrix on Docker Compose)
  lab replay ...          re-run one failing trial from its replay command
  lab soak                the correct profile under every fault and refresh point: 0/N + bounds
  lab window --profile D --vary VAR   when a defect loses the chat: the loss rate against one
                          variable (refresh delay, tabs' gap, age against the TTL, length)
  lab report DIR          (re)write DIR/report.html from a run folder's results and artifacts
  lab bench               the lab's runner against a plain Playwright loop, seconds per trial
  lab proxy up --redis HOST:PORT  Toxiproxy in front of an app's Redis (an app that already runs)
  lab up                  start the native stack (redis-server, toxiproxy-server, backend)
  lab status --json       what runs where
  lab down                stop everything the lab started (also after a killed `lab up`)
  lab faults | defects    list the faults and the backend's defects
  lab lesson [N]          list the lessons on async pitfalls, or run lesson N (--check, --reset)
  lab k8s run --shards N  the shards of deploy/k8s on a single-node Kubernetes cluster built here

Ports and folders come from LAB_* variables (LAB_REDIS_PORT, LAB_CHAT_PROXY_PORT, LAB_RUN_DIR...).
"""

# In the order `lab --help` lists them.
COMMANDS = (doctor, chaos, window, stack, bench, lesson, investigate, init, proxy, suspects, catalogue, k8s)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="lab", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for command in COMMANDS:
        command.add(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    from lab.common import signals

    args = build_parser().parse_args(argv)
    # Commands that run long and start things (long_running): SIGINT, SIGTERM and SIGHUP all
    # stop them as Ctrl-C does (trials stopped, partial report written, what they started
    # stopped), exit 128 + N.
    long_running = getattr(args, "long_running", False)
    try:
        with signals.interrupt_on() if long_running else nullcontext():
            code: int = args.func(args)
            return code
    except LabError as exc:
        print(redact.text(f"lab {args.command}: {exc}"), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as exc:
        code = signals.exit_code(exc)
        print(
            f"lab {args.command}: interrupted by {signals.name(code - 128)} (exit {code}); "
            "what this run started has been stopped",
            file=sys.stderr,
        )
        return code


if __name__ == "__main__":
    sys.exit(main())
