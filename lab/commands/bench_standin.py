"""`lab bench`'s last measure: what the stand-in model adds to a trial. The correct profile's
cell runs on the built-in service with its in-process fake and with its replies from the
stand-in (`lab chaos --model`) -- one running service, each fake request saying so
(X-Lab-Model: fake) -- with no model latency on either side (the fake answers at once,
the stand-in is given no time to first token).

The two sides run as twins, one trial at a time: each plan once on the fake and once on the
stand-in, back to back, the twin that goes first alternating (ABBA). A drift of the machine's
load over the measure's minute falls on both twins of a pair alike; the figure is the median of
the pairs' ratios, with its distribution-free 95 % interval. (Sides run in blocks of 20 trials
scattered by -16 % to +16 % a round on this machine: the drift between blocks, not the model.)
Per-trial seconds are each trial's own (its conversation and its final reads); the ratio is
printed, never asserted."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from lab.common.config import LabConfig
from lab.common.phases import mean_per_trial
from lab.model.outcome import TrialOutcome
from lab.model.stats import median_interval
from lab.plan.schedule import Cell, TrialPlan, plan_cell, tagged
from lab.runner.runner import Runner
from lab.runner.standin import FAKE
from lab.stack.model_link import ModelLink, backend_env
from lab.stack.native import NativeStack

CELL = Cell((), "none", "settled", 5)
REPLY_TOKENS = 10
BOUND = 0.05  # the issue's: the stand-in adds at most 5 % to a trial with no model latency


def instant(plans: list[TrialPlan]) -> list[TrialPlan]:
    """The plans with no model latency (the fake thinks 0 ms, the stand-in is given no TTFT),
    their messages tagged on both sides (the same texts the page shows and Redis stores)."""
    return [tagged(replace(p, llm_latency_ms=0, headers={**p.headers, "X-Lab-Llm-Latency-Ms": "0"})) for p in plans]


def twins(plans: list[TrialPlan], first: int = 0) -> list[tuple[TrialPlan, TrialPlan]]:
    """(fake, stand-in) twins of each plan -- the same seed and messages, their own trial ids --
    in the order they run: the fake first in pairs ``first``, ``first`` + 2, ...; the stand-in
    first in the others (ABBA, so that an order effect cancels)."""
    out = []
    for k, p in enumerate(plans):
        fake = replace(p, trial_id=f"{p.trial_id}f", headers={**p.headers, FAKE[0]: FAKE[1]})
        standin = replace(p, trial_id=f"{p.trial_id}s")
        out.append((fake, standin) if (k + first) % 2 == 0 else (standin, fake))
    return out


def measure(
    cfg: LabConfig, trials: int, rounds: int, concurrency: int, out: Path, seed: int, say: Callable[[str], None]
) -> dict[str, Any]:
    """``rounds`` runs of ``trials`` twin pairs, on one running service (its backend, Redis,
    Toxiproxy and the stand-in started once): the twins differ by the model alone."""
    done: dict[str, list[TrialOutcome]] = {"fake": [], "standin": []}
    pairs: list[float] = []
    with NativeStack(cfg, backend_env=backend_env(cfg)) as stack, ModelLink(cfg, stack.run_dir) as link:
        # Replies as long as the fake's (8-11 words): the page renders and Redis stores the
        # same amount on both sides, so the difference is the call's, not the reply's length.
        link.plan("chaoslab probe", tokens=REPLY_TOKENS)
        for r in range(rounds):
            say(f"      round {r + 1}/{rounds}: {trials} pairs ...")
            order = twins(plan_cell(CELL, trials, seed + r, prefix=f"b{r}-"), first=r)
            plans = instant([p for pair in order for p in pair])
            ran = Runner(stack, out / f"round-{r}", concurrency=concurrency, model=link).run([(CELL, plans)])
            by_id = {t.plan.trial_id: t for t in ran[0].trials if t.plan is not None}
            for a, b in order:
                fake, standin = (a, b) if FAKE[0] in a.headers else (b, a)
                f, s = by_id.get(fake.trial_id), by_id.get(standin.trial_id)
                done["fake"] += [f] if f else []
                done["standin"] += [s] if s else []
                if f and s and _judged(f) and _judged(s) and f.seconds > 0:
                    pairs.append(s.seconds / f.seconds - 1)
    fig = figures(done)
    fig["pairs"] = len(pairs)
    fig["added"] = statistics.median(pairs) if pairs else None
    ci = median_interval(pairs)
    fig["added_ci95"] = [round(ci[0], 4), round(ci[1], 4)] if ci else None
    return fig


def _judged(t: TrialOutcome) -> bool:
    return t.result.validity != "unknown"


def figures(done: dict[str, list[TrialOutcome]]) -> dict[str, Any]:
    """Median seconds per judged trial on each side, their ratio, and the phases that differ."""
    out: dict[str, Any] = {"cell": CELL.cell_id, "bound": BOUND}
    for side, trials in done.items():
        judged = [t for t in trials if t.result.validity != "unknown"]
        out[side] = {
            "trials": len(trials),
            "judged": len(judged),
            # The median: one trial stalled by the machine (a GC, a context's hiccup) moves a mean
            # of 40 by more than the stand-in's cost.
            "per_trial_s": statistics.median(t.seconds for t in judged) if judged else 0.0,
            "mean_s": sum(t.seconds for t in judged) / len(judged) if judged else 0.0,
            "phases_ms": {k: round(1000 * v, 1) for k, v in mean_per_trial([t.phases for t in judged]).items()},
        }
    a, b = out["fake"]["per_trial_s"], out["standin"]["per_trial_s"]
    out["added"] = b / a - 1 if a and b else None
    # What the stand-in's own phases add (the call inside the ack, the record read): less noisy
    # than the whole trial's time, whose other phases (the browser's) scatter by more than this.
    fp, sp = out["fake"]["phases_ms"], out["standin"]["phases_ms"]
    own_ms = sp.get("ack", 0.0) - fp.get("ack", 0.0) + sp.get("model_record", 0.0) - fp.get("model_record", 0.0)
    out["own_ms"] = round(own_ms, 1)
    out["own_share"] = own_ms / 1000 / a if a else None
    return out


def text(f: dict[str, Any]) -> str:
    fake, standin = f["fake"], f["standin"]
    if f["added"] is None:
        return "the stand-in's cost: not measured (a side had no judged trial)"
    lines = [
        f"the stand-in's cost ({f['cell']}, no model latency): "
        f"fake {1000 * fake['per_trial_s']:.0f} ms per trial, median of {fake['judged']} judged; "
        f"stand-in {1000 * standin['per_trial_s']:.0f} ms ({standin['judged']} judged)",
        f"  {f['added']:+.1%} a trial, the median of {f.get('pairs', 0)} twin pairs' ratios{_ci(f)}: {verdict(f)}",
    ]
    ack = standin["phases_ms"].get("ack", 0.0) - fake["phases_ms"].get("ack", 0.0)
    lines.append(f"  the model call, in the ack phase: {ack / CELL.turns:+.1f} ms a send (means)")
    if f.get("own_share") is not None:
        lines.append(
            f"  the stand-in's own phases (the call, the record read): {f['own_ms']:+.1f} ms a trial, "
            f"{f['own_share']:+.1%} of the fake's"
        )
    for phase, ms in standin["phases_ms"].items():
        base = fake["phases_ms"].get(phase, 0.0)
        if abs(ms - base) >= 2.0:
            lines.append(f"  {phase:<13} {base:7.1f} -> {ms:7.1f} ms")
    return "\n".join(lines)


def _ci(f: dict[str, Any]) -> str:
    ci = f.get("added_ci95")
    return f" (95 % interval {ci[0]:+.1%} to {ci[1]:+.1%})" if ci else " (too few pairs for an interval)"


def verdict(f: dict[str, Any]) -> str:
    """Against the bound, as far as the pairs can tell: within or over only where the whole
    interval is; otherwise the median's side, said as not shown."""
    ci, bound = f.get("added_ci95"), f["bound"]
    if ci and ci[1] <= bound:
        return f"within the {bound:.0%} bound"
    if ci and ci[0] > bound:
        return f"over the {bound:.0%} bound"
    side = "under" if f["added"] <= bound else "over"
    return f"the median is {side} the {bound:.0%} bound, the interval reaches across it (more pairs would tell)"
