"""`lab investigate`: bring up Redis + Toxiproxy, start the target against them, check its
contract, run the experiments, diagnose, and write the same reports as `lab chaos`."""

from __future__ import annotations

import json
import shutil
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from lab.config import LabConfig
from lab.errors import UsageError
from lab.faults.base import Targets
from lab.investigate import blackbox, diagnose as dg, target
from lab.investigate.blackbox import Experiment, Prober
from lab.investigate.link import RedisLink
from lab.investigate.records import TrialRec
from lab.investigate.spec import Spec, fill
from lab.signals import interrupt_on
from lab.stack.native import exclusive
from lab.stats import wilson

EXIT_CLEAN, EXIT_FOUND, EXIT_INCONCLUSIVE = 0, 1, 3


def link_for(cfg: LabConfig) -> RedisLink:
    """The investigation's own Redis + Toxiproxy, in a run folder next to the native stack's."""
    from dataclasses import replace

    return RedisLink(replace(cfg, run_dir=cfg.run_dir.with_name(cfg.run_dir.name + "-investigate")))


@dataclass
class Investigation:
    spec: Spec
    cfg: LabConfig
    plan: list[Experiment]
    trials: int
    reports_root: Path
    out: TextIO = sys.stdout

    def say(self, msg: str) -> None:
        print(msg, file=self.out, flush=True)

    def run(self) -> int:
        run_id = time.strftime("%Y%m%d-%H%M%S") + f"-investigate-{self.spec.name}"
        out_dir = self.reports_root / run_id
        link = link_for(self.cfg)
        # SIGTERM / SIGHUP unwind like Ctrl-C: the target, Redis and Toxiproxy are stopped.
        # One investigation per run folder: a second one would stop the first one's Redis and
        # Toxiproxy as "leftovers" when it starts.
        busy = UsageError(f"another lab investigate is running on {link.run_dir}",
                          "wait for it, or give this one its own LAB_RUN_DIR and LAB_*_PORT values")
        with exclusive(link.run_dir / "investigate.lock", busy), interrupt_on((signal.SIGTERM, signal.SIGHUP)):
            return self._run(link, out_dir)

    def _run(self, link: RedisLink, out_dir: Path) -> int:
        t0 = time.monotonic()
        records: list[TrialRec] = []
        interrupted = False
        state = link.up()
        try:
            host, port = self.cfg.host, self.cfg.ports["redis_proxy"]
            argv = [fill(a, target.placeholders(self.spec, host, port)) for a in self.spec.start.command]
            self.say(f"lab investigate: {self.spec.name}: Redis for the target at {host}:{port} "
                     f"(through Toxiproxy); starting: {' '.join(argv)}")
            with target.running(self.spec, link.run_dir, host, port) as proc:
                self.say(f"  target ready (pid {proc.pid}, log {link.run_dir / 'target.log'})")
                pg = self.spec.page
                self.say(f"  driving the app's own page {pg.path} by its selectors" if pg else
                         "  driving the API from the lab's page on the target's origin")
                with blackbox.chromium() as browser:
                    prober = Prober(self.spec, browser, Targets.of(link), self.cfg.redis_url)
                    try:
                        self.say("  " + blackbox.preflight(prober))
                        try:
                            self._experiments(prober, records)
                        except KeyboardInterrupt:
                            interrupted = True
                    finally:
                        prober.close()
                    self._check_alive(proc, link)
        finally:
            # The target's output is evidence (its own error logs): kept with the report.
            out_dir.mkdir(parents=True, exist_ok=True)
            if (link.run_dir / "target.log").is_file():
                shutil.copyfile(link.run_dir / "target.log", out_dir / "target.log")
            if not state.get("reused"):
                link.down()
        seconds = time.monotonic() - t0
        return self._report(records, out_dir, seconds, interrupted)

    def _check_alive(self, proc: Any, link: RedisLink) -> None:
        if not proc.alive():
            self.say(f"  warning: the target exited during the run; last lines:\n"
                     f"{target.tail(link.run_dir / 'target.log')}")

    def _experiments(self, prober: Prober, records: list[TrialRec]) -> None:
        for i, exp in enumerate(self.plan):
            for k in range(self.trials):
                rec = prober.trial(exp, f"e{i}-{exp.fault}-{exp.refresh}-{k:02d}")
                records.append(rec)
            known = [r for r in records if r.trial_id.startswith(f"e{i}-")]
            unknown = sum(1 for r in known if r.unknown)
            self.say(f"  {exp.cell_id}: {len(known)} trials"
                     + (f", {unknown} unknown ({known[-1].unknown if known[-1].unknown else ''})" if unknown else ""))

    # ------------------------------------------------------------------ reports
    def _report(self, records: list[TrialRec], out_dir: Path, seconds: float, interrupted: bool) -> int:
        from lab.report import html

        h = self.spec.history
        diagnoses = dg.diagnose(records, h.user_role, h.assistant_role)
        judged = dg.judged(records, h.user_role, h.assistant_role)
        cells = [self._cell(exp, i, records, h.user_role, h.assistant_role) for i, exp in enumerate(self.plan)]
        unexercised = [c for c in cells if c["status"] == "unexercised"]
        undiagnosed = sorted({name for _, c in judged for name, k in c.anomalies().items() if k})
        if diagnoses:
            code, verdict = EXIT_FOUND, f"{len(diagnoses)} diagnos{'is' if len(diagnoses) == 1 else 'es'}"
        elif undiagnosed:
            # Anomalies no diagnosis explains are still anomalies: never "no anomaly found".
            code, verdict = EXIT_FOUND, f"anomalies without a diagnosis: {', '.join(undiagnosed)}"
        elif unexercised or interrupted or not judged:
            code, verdict = EXIT_INCONCLUSIVE, "unknown: not every experiment was exercised"
        else:
            code, verdict = EXIT_CLEAN, "no anomaly found"
        reasons = [f"unexercised: {c['cell_id']}: {c['reason']}" for c in unexercised]
        if interrupted:
            reasons.append("interrupted: the report covers the finished trials only")
        results = {
            "run_id": out_dir.name, "seed": None, "mode": "investigate", "target": self.spec.name,
            "spec": str(self.spec.file), "page": "app" if self.spec.page else "lab",
            "roles": [h.user_role, h.assistant_role],
            "trials_per_cell": self.trials, "seconds": round(seconds, 1),
            "interrupted": interrupted, "verdict": verdict,
            "cells": cells, "verdicts": [],
            "diagnoses": [d.as_json() for d in diagnoses],
            "bounds": {name: {"k": k, "n": n, "upper95": round(u, 4)}
                       for name, (k, n, u) in dg.bounds(judged).items()},
            "replay": {}, "artifacts": {},
            "exit": {"code": code, "reasons": reasons},
        }
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "trials.json").write_text(json.dumps([r.as_json() for r in records], indent=1) + "\n")
        (out_dir / "results.json").write_text(json.dumps(results, indent=2) + "\n")
        (out_dir / "junit.xml").write_bytes(junit_xml(results))
        html.write(out_dir)
        latest = self.reports_root / "latest-investigate"
        latest.unlink(missing_ok=True)
        latest.symlink_to(out_dir.name)
        self.say(summary(results, judged, diagnoses, out_dir, seconds, len(records)))
        return 130 if interrupted else code

    def _cell(self, exp: Experiment, i: int, records: list[TrialRec], user_role: str,
              assistant_role: str) -> dict[str, Any]:
        mine = [r for r in records if r.trial_id.startswith(f"e{i}-")]
        j = dg.judged(mine, user_role, assistant_role)
        counts = {name: sum(1 for _, c in j if c.anomalies()[name]) for name in dg.ANOMALY_WORDS}
        n = len(j)
        lost = counts["lost"]
        lo, hi = wilson(lost, n)
        sends = sum(len(r.sends) for r in mine)
        acked = sum(1 for r in mine for s in r.sends if s.outcome == "ok")
        status, reason = ("invalid" if any(counts.values()) else "valid"), ""
        if n == 0:
            status = "unexercised"
            reason = next((r.unknown for r in mine if r.unknown), "no trial") or "no trial"
        return {"cell_id": exp.cell_id, "profile": f"target:{self.spec.name}", "defects": [],
                "fault": exp.fault, "fault_params": dict(exp.params), "refresh": exp.refresh,
                "turns": exp.turns, "why": exp.why, "trials": n, "unknown": len(mine) - n,
                "acknowledged": acked, "sends": sends,
                "anomalies": {k: v for k, v in counts.items() if v},
                "rates": {m: {"k": k, "n": n, "ci95": [round(x, 4) for x in wilson(k, n)]}
                          for m, k in counts.items()},
                "loss_rate": round(lost / n, 4) if n else 0.0, "ci95": [round(lo, 4), round(hi, 4)],
                "status": status, "reason": reason,
                "seconds_per_trial": round(sum(r.seconds for r in mine) / max(1, len(mine)), 3),
                "failing_trials": [r.trial_id for r, c in j if c.failed],
                "trial_ids": [r.trial_id for r in mine],
                "unknown_reasons": sorted({r.unknown for r in mine if r.unknown})}


def junit_xml(results: dict[str, Any]) -> bytes:
    """One test case per experiment, as `lab chaos` writes one per cell: a failure names its
    anomalies and the diagnoses drawn from its trials; an experiment that exercised nothing is
    an error."""
    import xml.etree.ElementTree as ET

    cells = results["cells"]
    suite = ET.Element("testsuite", name=f"chaoslab.investigate.{results['target']}", tests=str(len(cells)))
    failures = errors = 0
    for c in cells:
        case = ET.SubElement(suite, "testcase", classname=f"chaoslab.investigate.{results['target']}",
                             name=c["cell_id"], time=f"{c['seconds_per_trial'] * (c['trials'] + c['unknown']):.3f}")
        mine = set(c["trial_ids"])
        found = [d for d in results["diagnoses"] if mine & set(d["trials"])]
        anomalies = ", ".join(f"{k} {v}/{c['trials']}" for k, v in c["anomalies"].items())
        if c["status"] == "unexercised":
            errors += 1
            ET.SubElement(case, "error", message=f"unexercised: {c['reason']}")
        elif c["anomalies"] or found:
            failures += 1
            ET.SubElement(case, "failure", message=(anomalies or "diagnosed") + (
                "; " + ", ".join(d["code"] for d in found) if found else ""))
        ET.SubElement(case, "system-out").text = "\n".join(
            [f"{c['trials']} judged, {c['unknown']} unknown; {anomalies or 'no anomaly'}"]
            + [f"[{d['code']}] {d['cause']}: {d['evidence']}" for d in found])
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    return ET.tostring(suite, encoding="utf-8", xml_declaration=True)


def summary(results: dict[str, Any], judged: dg.Judged, diagnoses: list[dg.Diagnosis], out_dir: Path,
            seconds: float, n_trials: int) -> str:
    lines = ["", f"{'experiment':<52} {'trials':>6} {'unknown':>7} {'acked':>9}  anomalies"]
    for c in results["cells"]:
        an = ", ".join(f"{k} {v}/{c['trials']}" for k, v in c["anomalies"].items()) or \
            ("unexercised" if c["status"] == "unexercised" else "-")
        lines.append(f"{c['cell_id']:<52} {c['trials']:>6} {c['unknown']:>7} "
                     f"{c['acknowledged']:>4}/{c['sends']:<4}  {an}")
    lines.append("")
    if diagnoses:
        lines.append("Diagnoses (each with its evidence):")
        for d in diagnoses:
            lines.append(f"  - [{d.code}] {d.sentence()}")
    elif results["verdict"].startswith("anomalies without"):
        lines.append(f"{results['verdict']} -- see the table above and trials.json; no known cause fits "
                     "their evidence")
    elif results["exit"]["code"] == EXIT_CLEAN:
        n = len(judged)
        lines.append(f"No anomaly found in {n} judged trials ({n_trials - n} unknown). What could have been "
                     "missed, at 95% (Wilson upper bounds):")
        for name, b in results["bounds"].items():
            lines.append(f"  - {dg.ANOMALY_WORDS[name]}: {b['k']}/{b['n']} trials, rate < {100 * b['upper95']:.0f}%")
    else:
        lines.append("Unknown: nothing diagnosed, but the run does not bound what could have been missed:")
        lines += [f"  - {r}" for r in results["exit"]["reasons"]]
    lines += ["", f"{n_trials} trials in {seconds:.0f} s; results: {out_dir}/results.json "
              f"(trial records: trials.json, junit.xml)", f"open in a browser: {out_dir}/report.html"]
    return "\n".join(lines)


def run(spec: Spec, cfg: LabConfig, trials: int, turns: int, reports_root: Path,
        only: Callable[[Experiment], bool] | None = None) -> int:
    if only is None:
        plan = blackbox.default_plan(turns, spec.stream is not None)
    else:
        plan = [e for e in blackbox.default_plan(turns, spec.stream is not None)
                + blackbox.optional_plan(turns) if only(e)]
    return Investigation(spec, cfg, plan, trials, reports_root).run()
