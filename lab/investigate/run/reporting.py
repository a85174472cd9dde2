"""The end of an investigation: judge every trial once, diagnose, write the run's files
(results.json, trials.json, junit.xml, report.html) and say what was found -- or, for
a replay (lab replay --target), how often each diagnosis was drawn again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lab import diagnoses as dg
from lab.investigate.run.experiments import TrialId
from lab.model.attribution import CellStats, cell_stats
from lab.model.outcome import CellOutcome, TrialOutcome
from lab.report import RunDecision, decide, junit_xml, results_json, summary, write_run
from lab.report.model_side import model_side
from lab.common.signals import exit_code

if TYPE_CHECKING:
    from lab.investigate.run.experiments import Experiment
    from lab.investigate.spec.parse import Spec
    from lab.suspects import Scan


class Investigation(Protocol):
    """What the report reads of the run (lab.investigate.run.investigation.Investigation)."""

    spec: "Spec"
    plan: "list[tuple[int, Experiment]]"
    trials: int
    turns: int
    seed: int
    reports_root: Path
    replay_of: str | None
    scan: "Scan | None"

    def say(self, msg: str) -> None: ...
    def replay_command(self, trial_id: str, runs: int = 5) -> str: ...


def report(
    inv: "Investigation", done: list[TrialOutcome], out_dir: Path, seconds: float, interrupted: BaseException | None
) -> int:
    """Judge, diagnose, write results.json / trials.json / junit.xml / report.html, print."""
    trials = [o.trial for o in done]
    found, not_judged = dg.run(trials, [o.result for o in done])  # each trial checked once, as it finished
    stats, decision, results, bounds = _results(inv, done, out_dir, seconds, interrupted, found, not_judged)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "trials.json").write_text(json.dumps([t.as_json() for t in trials], indent=1) + "\n")
    write_run(
        out_dir,
        results,
        junit_xml(stats, decision, f"chaoslab.investigate.{inv.spec.name}", results["diagnoses"]),
        inv.reports_root,
        latest_name="latest-investigate",
    )
    if inv.replay_of:
        return _replayed(inv, found, len(done), out_dir)
    _say_summary(inv, stats, decision, results, bounds, found, not_judged, out_dir, seconds, len(done))
    return exit_code(interrupted) if interrupted is not None else decision.exit_code


def _results(
    inv: "Investigation",
    done: list[TrialOutcome],
    out_dir: Path,
    seconds: float,
    interrupted: BaseException | None,
    found: list[dg.Diagnosis],
    not_judged: dict[str, str],
) -> tuple[list[CellStats], RunDecision, dict[str, Any], dict[str, Any]]:
    cells = []
    for no, exp in inv.plan:
        cell = exp.cell(inv.spec.name)
        co = CellOutcome(cell, [o for o in done if TrialId.parse(o.trial_id).no == no])
        co.fault_evidence = next((o.trial.fault_evidence for o in co.trials if o.trial.fault_evidence), None)
        if co.trials:
            cells.append(co)
    stats = [cell_stats(c) for c in cells]
    for d in found:
        d.replay = inv.replay_command(d.trials[0]) if d.trials else None
    decision = decide(stats, [], interrupted is not None, diagnoses=found)
    # Each trial was checked once, as it finished: the bounds reuse those results.
    judged = [dg.Judged(o.trial, o.result) for o in done if o.result.validity != "unknown"]
    bounds = dg.bounds(judged)
    results = results_json(
        out_dir.name,
        inv.seed,
        "investigate",
        stats,
        [],
        cells,
        decision,
        {
            "target": inv.spec.name,
            "spec": str(inv.spec.file),
            "page": "app" if inv.spec.page else "lab",
            "roles": [inv.spec.history.user_role, inv.spec.history.assistant_role],
            "trials_per_cell": inv.trials,
            "turns": inv.turns,
            "seconds": round(seconds, 1),
            "interrupted": interrupted is not None,
            "verdict": decision.verdict,
            "replay_of": inv.replay_of,
        },
    )
    results["display"] = display(done)
    results["model"] = model_side(done)
    results["diagnoses"] = [d.as_json() for d in found]
    results["not_judged"] = not_judged
    results["bounds"] = {name: {"k": k, "n": n, "upper95": round(u, 4)} for name, (k, n, u) in bounds.items()}
    # The replay of each diagnosis: its first trial's command.
    results["replay"] = {d.trials[0]: inv.replay_command(d.trials[0]) for d in found if d.trials}
    if inv.scan is not None:
        from lab.suspects import verdict

        results["suspects"] = verdict.judge(inv.scan, [(d.code, d.k, d.n) for d in found], dg.pools(judged))
    return stats, decision, results, bounds


def _say_summary(
    inv: "Investigation",
    stats: list[CellStats],
    decision: RunDecision,
    results: dict[str, Any],
    bounds: dict[str, Any],
    found: list[dg.Diagnosis],
    not_judged: dict[str, str],
    out_dir: Path,
    seconds: float,
    n: int,
) -> None:
    lines = None
    if "suspects" in results:
        from lab.suspects import verdict

        lines = verdict.lines_text(
            results["suspects"],
            ", ".join(
                str(p.relative_to(inv.spec.start.cwd)) if p.is_relative_to(inv.spec.start.cwd) else str(p)
                for p in inv.spec.source
            ),
        )
    inv.say(
        summary(
            stats,
            decision,
            out_dir,
            seconds,
            n,
            diagnoses=found,
            bounds=bounds,
            replay=None,  # each diagnosis prints its own
            seed=inv.seed,
            lines_after=lines,
        )
    )
    if results["display"]["k"]:
        inv.say("Display, not loss: " + results["display"]["what"])
    if results["display"]["dropped"]["k"]:
        inv.say("The app's choice, not loss: " + results["display"]["dropped"]["what"])
    if results["model"]["what"]:
        inv.say("The model's side: " + results["model"]["what"])
    if not_judged and not found:
        inv.say(
            "Not judged (no trial had their evidence): " + "; ".join(f"{c} ({why})" for c, why in not_judged.items())
        )


def display(done: list[TrialOutcome]) -> dict[str, Any]:
    """What a refresh mid-stream showed: the cut reply missing from the page right after it,
    while the settled history holds it whole -- a finding about the page, not loss."""
    cut = [o for o in done if o.result.validity != "unknown" and any(s.cut for s in o.trial.sends)]
    hit = [o.trial_id for o in cut if o.result.cut_shown_missing]
    what = (
        f"in {len(hit)}/{len(cut)} trials with a reply cut mid-stream, the page right after the refresh "
        "showed the cut reply missing, and the settled history holds it whole (stored after the cut: "
        "a user sees it on the next load; trials " + ", ".join(hit[:4]) + (" ..." if len(hit) > 4 else "") + ")"
    )
    dropped = [o.trial_id for o in cut if o.result.cut_reply_dropped]
    choice = (
        f"in {len(dropped)}/{len(cut)} trials with a reply cut mid-stream, the question was stored and the reply "
        "the client left was not (the app drops a reply nobody reads to its end: a choice, not loss -- if a "
        f"refresh mid-reply should keep it, finish and store the reply when the client leaves; trials {dg.few(dropped)})"
    )
    return {
        "k": len(hit),
        "n": len(cut),
        "trials": hit,
        "what": what if hit else "",
        "dropped": {"k": len(dropped), "trials": dropped, "what": choice if dropped else ""},
    }


def _replayed(inv: "Investigation", found: list[dg.Diagnosis], runs: int, out_dir: Path) -> int:
    """A replay (`lab replay --target`): how many of the runs each diagnosis was drawn from."""
    if not found:
        inv.say(
            f"{inv.replay_of}, seed {inv.seed}: reproduced 0/{runs} (no diagnosis drawn); "
            f"results: {out_dir}/results.json"
        )
        return 1
    for d in found:
        inv.say(f"{inv.replay_of}, seed {inv.seed}: {d.code} reproduced {d.k}/{runs}: {d.evidence}")
    inv.say(f"results: {out_dir}/results.json")
    return 0
