"""Run outputs: results.json (the contract), junit.xml (one test case per cell), the terminal
summary, and the exit decision.

May import: lab.plan, lab.model, lab.diagnoses, lab.suspects.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.model.attribution import NOT_APPLICABLE, CellStats, Verdict
from lab.report import html
from lab.model.outcome import CellOutcome


@dataclass
class RunDecision:
    exit_code: int
    reasons: list[str]
    verdict: str = ""  # the run's outcome in words (lab investigate's headline)


EXIT_CLEAN, EXIT_FOUND, EXIT_INCONCLUSIVE = 0, 1, 3
# Anomalies a black-box run must explain or report. An error whose write was applied
# (phantom_fail) is the honest "outcome unknown" of a 5xx: only the phantom_failures diagnosis,
# where nothing excuses it, makes it a finding.
JUDGED = ("lost", "stale", "duplicated", "reordered", "unexpected", "expired", "amnesia", "history_failed")


def _name(s: CellStats) -> str:
    return f"{s.cell.profile} / {s.cell.label}"


def _correct_failed(s: CellStats) -> bool:
    """The correct profile lost or duplicated something acknowledged, or told the model less than
    it acknowledged (a Redis restart without persistence is the environment's loss, not the
    code's)."""
    return (
        not s.cell.defects
        and not s.cell.target
        and bool(s.with_metric["lost"] or s.with_metric["duplicated"] or s.with_metric.get("told_less"))
        and not (s.cell.fault == "redis_restart" and not s.cell.params.get("durable"))
    )


def decide(
    stats: list[CellStats], verdicts: list[Verdict], interrupted: bool, diagnoses: list[Any] | None = None
) -> RunDecision:
    """The one exit decision. `lab chaos` (``diagnoses`` None): exit 0 only for a complete,
    exercised run whose correct profile lost nothing. `lab investigate`: 1 when something was
    diagnosed or an anomaly stays unexplained (never "no anomaly found"), 3 when the run does not
    bound what it could have missed (unexercised, interrupted, nothing judged), else 0."""
    reasons = [
        f"unexercised: {_name(s)}: {s.reason}"
        for s in stats
        if s.status == "unexercised" and not s.reason.startswith(NOT_APPLICABLE)
    ]
    if diagnoses is None:
        reasons += [
            f"the correct profile lost or duplicated acknowledged messages: {_name(s)} "
            f"(lost in {s.with_metric['lost']}/{s.trials}, duplicated in "
            f"{s.with_metric['duplicated']}/{s.trials}"
            + (
                f", told the model less in {s.with_metric['told_less']}/{s.trials}"
                if s.with_metric.get("told_less")
                else ""
            )
            + f"; trials {', '.join(s.failing_trials[:5])})"
            for s in stats
            if s.status != "unexercised" and _correct_failed(s)
        ]
        if interrupted:
            reasons.append("interrupted: the report covers the finished trials only")
        return RunDecision(1 if reasons else 0, reasons)
    if interrupted:
        reasons.append("interrupted: the report covers the finished trials only")
    undiagnosed = sorted({a for s in stats for a, k in s.anomalies.items() if k and a in JUDGED})
    judged = sum(s.trials for s in stats)
    if diagnoses:
        n = len(diagnoses)
        return RunDecision(EXIT_FOUND, reasons, f"{n} diagnos{'is' if n == 1 else 'es'}")
    if undiagnosed:
        # Anomalies no diagnosis explains are still anomalies: never "no anomaly found".
        return RunDecision(EXIT_FOUND, reasons, f"anomalies without a diagnosis: {', '.join(undiagnosed)}")
    if reasons or not judged:
        return RunDecision(
            EXIT_INCONCLUSIVE, reasons or ["no trial was judged"], "unknown: not every experiment was exercised"
        )
    return RunDecision(EXIT_CLEAN, reasons, "no anomaly found")


def results_json(
    run_id: str,
    seed: int,
    mode: str,
    stats: list[CellStats],
    verdicts: list[Verdict],
    outcomes: list[CellOutcome],
    decision: RunDecision,
    extra: dict[str, Any],
) -> dict[str, Any]:
    replay = {t.trial_id: t.replay_command() for o in outcomes for t in o.trials if t.failed}
    return {
        "run_id": run_id,
        "seed": seed,
        "mode": mode,
        **extra,
        "cells": [s.as_json() for s in stats],
        "verdicts": [v.as_json() for v in verdicts],
        "replay": replay,
        "artifacts": {t.trial_id: str(t.artifacts) for o in outcomes for t in o.trials if t.artifacts},
        "exit": {"code": decision.exit_code, "reasons": decision.reasons},
    }


def junit_xml(
    stats: list[CellStats],
    decision: RunDecision,
    suite: str = "chaoslab",
    diagnoses: list[dict[str, Any]] | None = None,
) -> bytes:
    """One test case per cell. A cell that exercised nothing is an error; a failure is the
    correct profile losing or duplicating (`lab chaos`), or, for a black box, any anomaly or
    diagnosis drawn from the cell's trials (named in the message)."""
    cases = ET.Element("testsuite", name=suite, tests=str(len(stats)))
    failures = errors = 0
    for s in stats:
        case = ET.SubElement(
            cases,
            "testcase",
            classname=f"{suite}.{s.cell.profile}",
            name=s.cell.cell_id,
            time=f"{s.seconds_per_trial * max(1, s.trials + s.unknown):.3f}",
        )
        rates = ", ".join(f"{m} {k}/{s.trials}" for m, k in s.anomalies.items() if k) or "no anomaly"
        mine = set(s.trial_ids)
        found = [d for d in diagnoses or [] if mine & set(d["trials"])]
        if s.status == "unexercised" and s.reason.startswith(NOT_APPLICABLE):
            # Nothing the app's design left to test (a model cut of whole answers): skipped, said why.
            ET.SubElement(case, "skipped", message=s.reason)
        elif s.status == "unexercised":
            errors += 1
            ET.SubElement(case, "error", message=f"unexercised: {s.reason}")
        elif diagnoses is None and _correct_failed(s):
            failures += 1
            ET.SubElement(case, "failure", message=f"correct profile: {rates}")
        elif diagnoses is not None and (found or any(k for a, k in s.anomalies.items() if a in JUDGED)):
            failures += 1
            ET.SubElement(
                case, "failure", message=rates + ("; " + ", ".join(d["code"] for d in found) if found else "")
            )
        ET.SubElement(case, "system-out").text = "\n".join(
            [f"{s.trials} judged, {s.unknown} unknown; {rates}"]
            + [f"[{d['code']}] {d['cause']}: {d['evidence']}" for d in found]
        )
    cases.set("failures", str(failures))
    cases.set("errors", str(errors))
    cases.set("skipped", str(sum(s.status == "unexercised" and s.reason.startswith(NOT_APPLICABLE) for s in stats)))
    return ET.tostring(cases, encoding="utf-8", xml_declaration=True)


LETTERS = (
    ("lost", "L"),
    ("expired", "E"),
    ("duplicated", "D"),
    ("amnesia", "A"),
    ("reordered", "R"),
    ("history_failed", "H"),
    ("stale", "S"),
    ("phantom_fail", "P"),
)


def table(stats: list[CellStats]) -> str:
    """Profiles x (fault / refresh): each entry the dominant anomaly and its trials."""
    cols: list[str] = []
    rows: list[str] = []
    grid: dict[tuple[str, str], str] = {}
    for s in stats:
        col = s.cell.label
        if col not in cols:
            cols.append(col)
        if s.cell.profile not in rows:
            rows.append(s.cell.profile)
        if s.status == "unexercised":
            entry = "n/a" if s.reason.startswith(NOT_APPLICABLE) else "unexercised"
        else:
            # The first of the most frequent, in LETTERS' order: loss before the milder ones.
            k, letter = max(
                (max(s.anomalies.get(m, 0), s.with_metric.get(m, 0)), -i, x) for i, (m, x) in enumerate(LETTERS)
            )[::2]
            entry = f"{letter} {k}/{s.trials}" if k else f"- 0/{s.trials}"
        grid[(s.cell.profile, col)] = entry
    w0 = max([len(r) for r in rows] + [7])
    widths = [max(len(c), 11) for c in cols]
    lines = [" " * w0 + "  " + "  ".join(c.ljust(w) for c, w in zip(cols, widths))]
    for r in rows:
        lines.append(r.ljust(w0) + "  " + "  ".join(grid.get((r, c), "").ljust(w) for c, w in zip(cols, widths)))
    lines.append(
        "L = acknowledged turns lost, E = lost to an expired TTL, D = duplicated, "
        "A = amnesia after the refresh, R = stored out of order, H = the page's history read "
        "failed after the refresh, S = stale read, P = error whose write was applied; k/n trials "
        "(unknown trials excluded)"
    )
    return "\n".join(lines)


def _findings(
    stats: list[CellStats],
    decision: RunDecision,
    n_trials: int,
    verdicts: list[Verdict] | None,
    diagnoses: list[Any] | None,
    bounds: dict[str, tuple[int, int, float]] | None,
) -> list[str]:
    """`lab chaos`'s verdicts, `lab investigate`'s diagnoses, or what a clean run bounds."""
    lines: list[str] = []
    if diagnoses is None:
        vs = verdicts or []
        lines.append("Verdicts:")
        causes = [v for v in vs if v.causes]
        lines += [f"  - {v.sentence()}" for v in causes] or ["  (none: no defect met the attribution rule)"]
        inconclusive = [v for v in vs if not v.causes]
        if inconclusive:
            lines.append(f"  ({len(inconclusive)} inconclusive; see results.json)")
    elif diagnoses:
        lines.append("Diagnoses (each with its evidence):")
        for d in diagnoses:
            lines.append(f"  - [{d.code}] {d.sentence()}")
            if getattr(d, "replay", None):
                lines.append(f"    replay trial {d.trials[0]} (prints how often it is reproduced): {d.replay}")
    elif decision.exit_code == EXIT_FOUND:
        lines.append(f"{decision.verdict} -- see the table above and trials.json; no known cause fits their evidence")
    elif decision.exit_code == EXIT_CLEAN:
        from lab.diagnoses import ANOMALY_WORDS

        n = sum(s.trials for s in stats)
        lines.append(
            f"No anomaly found in {n} judged trials ({n_trials - n} unknown). What could have been "
            "missed, at 95% (Wilson upper bounds):"
        )
        lines += [
            f"  - {ANOMALY_WORDS[name]}: {k}/{nn} trials, rate < {100 * u:.0f}%"
            for name, (k, nn, u) in (bounds or {}).items()
        ]
    else:
        lines.append("Unknown: nothing diagnosed, but the run does not bound what could have been missed:")
    return lines


def summary(
    stats: list[CellStats],
    decision: RunDecision,
    out_dir: Path,
    seconds: float,
    n_trials: int,
    verdicts: list[Verdict] | None = None,
    diagnoses: list[Any] | None = None,
    bounds: dict[str, tuple[int, int, float]] | None = None,
    replay: str | None = None,
    seed: int | None = None,
    lines_after: str | None = None,
) -> str:
    """The one terminal summary: the table, then `lab chaos`'s verdicts or `lab investigate`'s
    diagnoses (or what a clean run bounds) -- and ``lines_after``, the suspect lines they prove
    or clear --, a replay command, where the reports are, the exit."""
    lines = ["", table(stats), ""] + _findings(stats, decision, n_trials, verdicts, diagnoses, bounds)
    if lines_after:
        lines += ["", lines_after]
    failing = sum(s.failed for s in stats)
    if replay:
        lines += ["", f"Failing trials: {failing} (artifacts in {out_dir}/trials/); replay one:", f"  {replay}"]
    lines += [
        "",
        f"{n_trials} trials in {seconds:.0f} s ({seconds / max(n_trials, 1):.2f} s per trial)"
        + (f", seed {seed}" if seed is not None else "")
        + f"; results: {out_dir}/results.json, junit.xml",
        f"open in a browser: {out_dir}/report.html",
    ]
    if diagnoses is None and decision.exit_code == 0:
        lines.append("Run valid: every cell exercised, the correct profile lost nothing.")
    elif diagnoses is None:
        lines.append("Run NOT valid:")
    if decision.reasons and (diagnoses is None or decision.exit_code != EXIT_CLEAN):
        lines += [f"  - {r}" for r in decision.reasons]
    return "\n".join(lines)


def write_run(
    out_dir: Path, results: dict[str, Any], junit: bytes, reports_root: Path, latest_name: str = "latest"
) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    (out_dir / "junit.xml").write_bytes(junit)
    html.write(out_dir)
    latest = reports_root / latest_name
    tmp = reports_root / f".{latest_name}-{os.getpid()}"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(out_dir.name)
    os.replace(tmp, latest)  # atomic: readers never see a missing "latest"
