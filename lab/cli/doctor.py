"""`lab doctor` (what a run needs here, and the command for each thing missing) and `lab setup`
(install it: apt as root, `go install` for Toxiproxy) -- lab.commands.needs."""

from __future__ import annotations

import argparse
from typing import Any

DOCTOR = """\
Checks what a run needs on this machine, found where the lab's runs look for it:
redis-server and Chromium on PATH (Debian's), Toxiproxy in the lab's bin folder (LAB_BIN; in a
checkout .lab/bin, else ~/.cache/chaoslab/bin) or on PATH, and for compose targets a Docker
engine and Docker Compose. For each thing missing it prints the one command that installs it.

exit 0: a native run has everything it needs (a compose target may still lack Docker: shown);
exit 2: something every run needs is missing.
"""

SETUP = """\
Installs what `lab doctor` finds missing: Debian's redis-server and Chromium with apt-get (as
root; otherwise it prints the apt-get line to run), Toxiproxy with `go install` into the lab's
bin folder (where Go is installed). Idempotent: what is present is left alone. `make setup` in
the lab's checkout runs this too.

  lab setup                 everything a native run needs (system + toxiproxy)
  lab setup toxiproxy       only Toxiproxy (LAB_BIN=DIR: into DIR)
  lab setup docker compose  what a compose target needs besides
"""


def add(sub: Any) -> None:
    d = sub.add_parser(
        "doctor",
        help="what a run needs on this machine, and how to install what is missing",
        description=DOCTOR,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    d.set_defaults(func=doctor)
    s = sub.add_parser(
        "setup",
        help="install what a run needs (apt as root, go install for Toxiproxy)",
        description=SETUP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("needs", nargs="*", metavar="NEED", help="all (default), system, redis-server, toxiproxy, ...")
    s.set_defaults(func=setup)


def doctor(args: argparse.Namespace) -> int:
    from lab.commands import needs
    from lab.common.config import LabConfig, home

    cfg = LabConfig.from_env()
    print(f"lab doctor: what a run needs on this machine (run folders: {home()}; bin: {cfg.bin_dir})")
    missing = []
    for need, found in needs.check(cfg):
        if found:
            print(f"  ok       {need.name:<13} {found}")
            continue
        scope = "" if need.required else " (compose targets only)"
        print(f"  MISSING  {need.name:<13} {need.why}{scope}\n           install: {needs.fix(need, cfg)}")
        missing += [need.name] if need.required else []
    if missing:
        print(f"lab doctor: {', '.join(missing)} missing -- run the commands above (as root, `lab setup` runs them)")
        return 2
    print("lab doctor: everything a native run needs is here")
    return 0


def setup(args: argparse.Namespace) -> int:
    from lab.commands import needs
    from lab.common.config import LabConfig

    cfg = LabConfig.from_env()
    needs.setup(needs.names(args.needs), cfg, lambda line: print(f"[setup] {line}", flush=True))
    return 0
