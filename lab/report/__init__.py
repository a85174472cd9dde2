"""Run outputs: results.json (the contract), junit.xml (one test case per cell), the terminal
summary, and the exit decision."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.attribution import CellStats, Verdict
from lab.report import html
from lab.runner import CellOutcome
from lab.schedule import fault_text


@dataclass
class RunDecision:
    exit_code: int
    reasons: list[str]


def decide(stats: list[CellStats], verdicts: list[Verdict], interrupted: bool) -> RunDecision:
    """Exit 0 only for a complete, exercised run whose correct profile lost nothing."""
    reasons = []
    for s in stats:
        name = f"{s.cell.profile} / {fault_text(s.cell.fault, s.cell.params)} / {s.cell.refresh}"
        if s.status == "unexercised":
            reasons.append(f"unexercised: {name}: {s.reason}")
        elif not s.cell.defects and (s.with_metric["lost"] or s.with_metric["duplicated"]):
            if s.cell.fault == "redis_restart" and not s.cell.params.get("durable"):
                continue  # reported as "environment: no persistence", not a defect of the code
            reasons.append(f"the correct profile lost or duplicated acknowledged messages: {name} "
                           f"(lost in {s.with_metric['lost']}/{s.trials}, duplicated in "
                           f"{s.with_metric['duplicated']}/{s.trials}; trials {', '.join(s.failing_trials[:5])})")
    if interrupted:
        reasons.append("interrupted: the report covers the finished trials only")
    return RunDecision(1 if reasons else 0, reasons)


def results_json(run_id: str, seed: int, mode: str, stats: list[CellStats], verdicts: list[Verdict],
                 outcomes: list[CellOutcome], decision: RunDecision, extra: dict[str, Any]) -> dict[str, Any]:
    replay = {t.plan.trial_id: t.plan.replay_command(mode=t.mode) for o in outcomes for t in o.trials if t.failed}
    return {"run_id": run_id, "seed": seed, "mode": mode, **extra,
            "cells": [s.as_json() for s in stats],
            "verdicts": [v.as_json() for v in verdicts],
            "replay": replay,
            "artifacts": {t.plan.trial_id: str(t.artifacts) for o in outcomes for t in o.trials
                          if t.artifacts},
            "exit": {"code": decision.exit_code, "reasons": decision.reasons}}


def junit_xml(stats: list[CellStats], decision: RunDecision) -> bytes:
    suite = ET.Element("testsuite", name="chaoslab", tests=str(len(stats)))
    failures = errors = 0
    for s in stats:
        case = ET.SubElement(suite, "testcase", classname=f"chaoslab.{s.cell.profile}",
                             name=s.cell.cell_id, time=f"{s.seconds_per_trial * max(1, s.trials):.3f}")
        rates = ", ".join(f"{m} {k}/{s.trials}" for m, k in s.with_metric.items())
        if s.status == "unexercised":
            errors += 1
            ET.SubElement(case, "error", message=f"unexercised: {s.reason}")
        elif not s.cell.defects and (s.with_metric["lost"] or s.with_metric["duplicated"]) and not (
                s.cell.fault == "redis_restart" and not s.cell.params.get("durable")):
            failures += 1
            ET.SubElement(case, "failure", message=f"correct profile: {rates}")
        ET.SubElement(case, "system-out").text = f"{rates}; anomalies {s.anomalies}"
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    return ET.tostring(suite, encoding="utf-8", xml_declaration=True)


def table(stats: list[CellStats]) -> str:
    """Profiles x (fault / refresh): each entry the dominant anomaly and its trials."""
    cols: list[str] = []
    rows: list[str] = []
    grid: dict[tuple[str, str], str] = {}
    for s in stats:
        col = f"{fault_text(s.cell.fault, s.cell.params)}/{s.cell.refresh}" + (
            f"/t{s.cell.turns}" if s.cell.turns != 5 else "")
        if col not in cols:
            cols.append(col)
        if s.cell.profile not in rows:
            rows.append(s.cell.profile)
        if s.status == "unexercised":
            entry = "unexercised"
        else:
            letters = [(s.with_metric[m], m[0].upper()) for m in ("lost", "expired", "duplicated", "amnesia")]
            k, letter = max(letters)
            entry = f"{letter} {k}/{s.trials}" if k else f"- 0/{s.trials}"
        grid[(s.cell.profile, col)] = entry
    w0 = max([len(r) for r in rows] + [7])
    widths = [max(len(c), 11) for c in cols]
    lines = [" " * w0 + "  " + "  ".join(c.ljust(w) for c, w in zip(cols, widths))]
    for r in rows:
        lines.append(r.ljust(w0) + "  " + "  ".join(grid.get((r, c), "").ljust(w)
                                                    for c, w in zip(cols, widths)))
    lines.append("L = acknowledged turns lost, E = lost to an expired TTL, D = duplicated, "
                 "A = amnesia after the refresh; "
                 "k/n trials (unknown trials excluded)")
    return "\n".join(lines)


def write_run(out_dir: Path, results: dict[str, Any], junit: bytes, reports_root: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    (out_dir / "junit.xml").write_bytes(junit)
    html.write(out_dir)
    latest = reports_root / "latest"
    tmp = reports_root / f".latest-{os.getpid()}"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(out_dir.name)
    os.replace(tmp, latest)  # atomic: readers never see a missing "latest"
