"""`lab bench`'s last measure: what the stand-in model adds to a trial. The correct profile's
cell runs on the built-in service with its in-process fake and with its replies from the
stand-in (`lab chaos --model`) -- one running service, each fake request saying so
(X-Lab-Model: fake) -- with no model latency on either side (the fake answers at once,
the stand-in is given no time to first token), in alternating rounds so that a drift of the
machine's load falls on both. Per-trial seconds are each trial's own (its conversation and its
final reads, not its wait for a browser context); the ratio is printed, never asserted."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from lab.common.config import LabConfig
from lab.common.phases import mean_per_trial
from lab.model.outcome import TrialOutcome
from lab.plan.schedule import Cell, TrialPlan, plan_cell, tagged
from lab.runner.runner import Runner
from lab.stack.model_link import ModelLink, backend_env
from lab.stack.native import NativeStack

CELL = Cell((), "none", "settled", 5)
REPLY_TOKENS = 10
BOUND = 0.05  # the issue's: the stand-in adds at most 5 % to a trial with no model latency


def instant(plans: list[TrialPlan]) -> list[TrialPlan]:
    """The plans with no model latency (the fake thinks 0 ms, the stand-in is given no TTFT),
    their messages tagged on both sides (the same texts the page shows and Redis stores)."""
    return [tagged(replace(p, llm_latency_ms=0, headers={**p.headers, "X-Lab-Llm-Latency-Ms": "0"})) for p in plans]


def _side(
    stack: NativeStack, link: ModelLink | None, plans: list[TrialPlan], concurrency: int, out: Path
) -> list[TrialOutcome]:
    """One side's trials on the one running service: on the stand-in (``link``), or on the
    service's in-process fake (each request says so: X-Lab-Model: fake)."""
    if link is None:
        fake = [replace(p, headers={**p.headers, "X-Lab-Model": "fake"}) for p in plans]
        return Runner(stack, out, concurrency=concurrency).run([(CELL, fake)])[0].trials
    return Runner(stack, out, concurrency=concurrency, model=link).run([(CELL, plans)])[0].trials


def measure(
    cfg: LabConfig, trials: int, rounds: int, concurrency: int, out: Path, seed: int, say: Callable[[str], None]
) -> dict[str, Any]:
    """``rounds`` of (fake, stand-in), ``trials`` each; the same plans on both sides, on one
    running service (its backend, Redis, Toxiproxy and the stand-in started once): the sides
    differ by the model alone, not by a restart between them."""
    done: dict[str, list[TrialOutcome]] = {"fake": [], "standin": []}
    pairs: list[float] = []
    with NativeStack(cfg, backend_env=backend_env(cfg)) as stack, ModelLink(cfg, stack.run_dir) as link:
        # Replies as long as the fake's (8-11 words): the page renders and Redis stores the
        # same amount on both sides, so the difference is the call's, not the reply's length.
        link.plan("chaoslab probe", tokens=REPLY_TOKENS)
        for r in range(rounds):
            plans = instant(plan_cell(CELL, trials, seed + r, prefix=f"b{r}-"))
            here: dict[str, list[TrialOutcome]] = {}
            # ABBA: the side that runs first alternates, so an order effect cancels.
            for side in ("fake", "standin") if r % 2 == 0 else ("standin", "fake"):
                say(f"      round {r + 1}/{rounds}: {side} ...")
                model = link if side == "standin" else None
                here[side] = _side(stack, model, plans, concurrency, out / f"{side}-{r}")
                done[side] += here[side]
            added = figures(here)["added"]
            if added is not None:
                pairs.append(added)
    f = figures(done)
    # Each round's two sides ran back to back: their ratio is the least touched by the machine's
    # drift over the minutes the measure takes; the median of the rounds' ratios is the figure.
    f["rounds"] = [round(x, 4) for x in pairs]
    f["added"] = statistics.median(pairs) if pairs else None
    return f


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
        f"stand-in {1000 * standin['per_trial_s']:.0f} ms ({standin['judged']} judged): "
        f"{f['added']:+.1%}, the median of {len(f.get('rounds', []))} rounds' ratios "
        f"({'within' if f['added'] <= f['bound'] else 'over'} the {f['bound']:.0%} bound)"
    ]
    if f.get("rounds"):
        lines.append("  each round: " + ", ".join(f"{x:+.1%}" for x in f["rounds"]))
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
