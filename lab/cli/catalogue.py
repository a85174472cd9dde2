"""`lab faults`, `lab defects`, `lab report DIR`: what there is, and a report rewritten."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

from lab.common.config import MODES
from lab.common.errors import UsageError


def add(sub: Any) -> None:
    sub.add_parser("faults", help="list the faults and their parameters").set_defaults(func=run_faults)
    sub.add_parser("defects", help="list the backend's defects").set_defaults(func=run_defects)
    rep = sub.add_parser(
        "report",
        help="(re)write report.html for a run folder",
        description="Render DIR/report.html from DIR/results.json and the failing "
        "trials' artifacts (DIR/trials/*): a self-contained page (no network).",
    )
    rep.add_argument("dir", metavar="DIR", help="a run folder, e.g. reports/latest")
    rep.set_defaults(func=run_report)


def run_faults(args: argparse.Namespace) -> int:
    from lab.faults import REGISTRY

    for name, cls in sorted(REGISTRY.items()):
        params = ", ".join(f"{f.name}={f.default!r}" for f in dataclasses.fields(cls))
        only = f" [{'/'.join(cls.modes)} only]" if set(cls.modes) != set(MODES) else ""
        print(f"{name:<20} {cls.summary}{only}" + (f"\n{'':<20} params: {params}" if params else ""))
    return 0


def run_defects(args: argparse.Namespace) -> int:
    from services.chat.defects import INCIDENT, REGISTRY as DEFECTS

    for d in DEFECTS.values():
        print(f"{d.name:<20} {d.summary}")
    print(f"\nincident profile: {','.join(INCIDENT)}")
    return 0


def run_report(args: argparse.Namespace) -> int:
    from lab.report import html

    folder = Path(args.dir)
    if not (folder / "results.json").is_file():
        raise UsageError(f"{folder} has no results.json", "give a run folder, e.g. reports/latest")
    print(f"lab report: {html.write(folder)}")
    return 0
