"""`lab bench`'s like-with-like measure: what a trial of `lab investigate` costs against a trial of
`lab chaos` running the same experiment on the same service. The built-in chat service, correct,
no fault, refreshed once the last turn settled, 5 turns: `lab chaos` drives it as its own (its
backend's events say when it is quiet), `lab investigate` as a black box through
examples/chat-service.toml (the history read until it stays the same, the key read from Redis).

Rounds alternate the side that runs first (ABBA), so a drift of the machine's load falls on both;
each round's ratio is of two runs back to back, and the median of the rounds' ratios is the
figure. Per trial: the median of each trial's own seconds (from its browser context to its
verdict, not its wait for a context), and the side's wall time over its trials (browser start
included on both sides; the investigation's contract check, once per run, too). Printed, never
asserted: the bench measures."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lab.common.config import ROOT, LabConfig
from lab.model.outcome import TrialOutcome
from lab.plan.schedule import Cell, plan_cell
from lab.runner.runner import Runner
from lab.stack.native import NativeStack

CELL = Cell((), "none", "settled", 5)
# Per trial: its own seconds (median), the side's wall time over its trials, the machine's CPU.
MEASURES = ("per_trial_s", "wall_per_trial_s", "cpu_per_trial_s")
SPEC = ROOT / "examples" / "chat-service.toml"
# The investigate side (lab.investigate.run.bench_side.run_cell, passed in by the CLI: the
# commands do not import lab.investigate): (spec, cell, config, trials, concurrency, seed, out
# folder) -> (its trials, the seconds of its browser session less its contract check, the
# contract check's: once per run, beside its trials -- lab chaos has none).
InvestigateSide = Callable[[Path, Cell, LabConfig, int, int, int, Path], tuple[list[TrialOutcome], float, float]]


def machine_cpu_s() -> float:
    """CPU seconds the whole machine has spent busy (every process: the browser, the app,
    Redis, Toxiproxy, the lab), from /proc/stat: both sides' trials cost what they make every
    process of the machine do."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _chaos(stack: NativeStack, trials: int, concurrency: int, seed: int, out: Path) -> dict[str, Any]:
    t0, cpu0 = time.monotonic(), machine_cpu_s()
    got = Runner(stack, out, concurrency=concurrency).run([(CELL, plan_cell(CELL, trials, seed))])[0].trials
    return _side(got, time.monotonic() - t0, machine_cpu_s() - cpu0)


def marked_phases(events: list[dict[str, Any]]) -> dict[str, float]:
    """Seconds per phase of a black-box trial, from its phase marks (each ends a phase)."""
    marks = [e for e in events if e.get("kind") == "phase"]
    out: dict[str, float] = {}
    for a, b in zip(marks, marks[1:]):
        out[b["phase"]] = out.get(b["phase"], 0.0) + float(b["t"]) - float(a["t"])
    return out


def _side(trials: list[TrialOutcome], wall_s: float, cpu_s: float) -> dict[str, Any]:
    judged = [t for t in trials if t.result.validity != "unknown"]
    # An investigate trial marks where each phase ends (the runner's own timing of it holds only
    # the slot, the check and the close); a chaos trial's driver times its phases itself.
    phases = [marked_phases(t.trial.events) or t.phases for t in judged]
    return {
        "trials": len(trials),
        "judged": len(judged),
        "per_trial_s": statistics.median(t.seconds for t in judged) if judged else 0.0,
        "wall_per_trial_s": wall_s / len(trials) if trials else 0.0,
        "cpu_per_trial_s": cpu_s / len(trials) if trials else 0.0,
        "phases_ms": {k: sum(p.get(k, 0.0) for p in phases) * 1000 / len(phases) for k in phases[0]} if phases else {},
    }


def measure(
    stack: NativeStack,
    investigate: InvestigateSide,
    trials: int,
    rounds: int,
    concurrency: int,
    out: Path,
    seed: int,
    say: Callable[[str], None],
) -> dict[str, Any]:
    """``rounds`` of (chaos, investigate), ``trials`` each at ``concurrency``, ABBA order."""
    sides: dict[str, list[dict[str, Any]]] = {"chaos": [], "investigate": []}
    ratios: list[dict[str, float]] = []
    for r in range(rounds):
        here: dict[str, dict[str, Any]] = {}
        for side in ("chaos", "investigate") if r % 2 == 0 else ("investigate", "chaos"):
            say(f"      round {r + 1}/{rounds}: {side} ...")
            if side == "chaos":
                stack.up()
                here[side] = _chaos(stack, trials, concurrency, seed + r, out / f"chaos-{r}")
            else:
                stack.down()  # the investigation's Redis and Toxiproxy take the same ports
                cpu0 = machine_cpu_s()  # (its Redis, Toxiproxy and the app's start-up included)
                got, browse_s, contract_s = investigate(
                    SPEC, CELL, stack.cfg, trials, concurrency, seed + r, out / f"inv-{r}"
                )
                here[side] = {**_side(got, browse_s, machine_cpu_s() - cpu0), "contract_s": contract_s}
            sides[side].append(here[side])
        if here["chaos"]["judged"] and here["investigate"]["judged"]:
            ratios.append({k: here["investigate"][k] / here["chaos"][k] for k in MEASURES if here["chaos"][k]})
    stack.up()  # the bench's own stack again
    return {
        "cell": CELL.cell_id,
        "target": str(SPEC.relative_to(ROOT)),
        "concurrency": concurrency,
        **{side: _merged(runs) for side, runs in sides.items()},
        "rounds": [{k: round(v, 3) for k, v in r.items()} for r in ratios],
        # Each measure's ratio: the median of the rounds' (two runs back to back each).
        "ratio": {k: round(statistics.median(r[k] for r in ratios if k in r), 3) for k in MEASURES} if ratios else None,
    }


def _merged(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """A side's rounds as one: medians of the rounds' per-trial figures, trials summed."""
    return {
        "trials": sum(r["trials"] for r in runs),
        "judged": sum(r["judged"] for r in runs),
        "per_trial_s": round(statistics.median(r["per_trial_s"] for r in runs), 4) if runs else 0.0,
        "wall_per_trial_s": round(statistics.median(r["wall_per_trial_s"] for r in runs), 4) if runs else 0.0,
        "cpu_per_trial_s": round(statistics.median(r["cpu_per_trial_s"] for r in runs), 4) if runs else 0.0,
        **(
            {"contract_s": round(statistics.median(r["contract_s"] for r in runs), 2)}
            if "contract_s" in runs[0]
            else {}
        ),
        "phases_ms": {
            k: round(statistics.mean(r["phases_ms"].get(k, 0.0) for r in runs), 1) for k in runs[0]["phases_ms"]
        }
        if runs
        else {},
    }


def text(f: dict[str, Any]) -> str:
    chaos, inv = f["chaos"], f["investigate"]
    if f["ratio"] is None:
        return "investigate against lab chaos: not measured (a side had no judged trial)"
    return "\n".join(
        [
            f"investigate against lab chaos, same experiment ({f['cell']}; {f['target']}, {f['concurrency']} at once):",
            f"  {'':<12} {'own s/trial':>12} {'wall s/trial':>13} {'CPU s/trial':>12} {'judged':>7}",
            *(
                f"  {name:<12} {s['per_trial_s']:>12.3f} {s['wall_per_trial_s']:>13.3f} "
                f"{s['cpu_per_trial_s']:>12.3f} {s['judged']:>4}/{s['trials']}"
                for name, s in (("lab chaos", chaos), ("investigate", inv))
            ),
            "  investigate / chaos: "
            + ", ".join(f"{w} x{f['ratio'][k]:.2f}" for k, w in zip(MEASURES, ("own", "wall", "CPU"), strict=True))
            + f" (medians of {len(f['rounds'])} rounds' ratios)",
            "  own: a trial's seconds in its context (median); wall: the side's browser start and trials over "
            "its trials; CPU: every process of the machine over its trials"
            + (
                f"; investigate's contract check, once per run, apart: {inv['contract_s']:.1f} s"
                if "contract_s" in inv
                else ""
            ),
            *(
                f"  {name} phases (ms a trial): "
                + ", ".join(f"{k} {v:.0f}" for k, v in s["phases_ms"].items() if v >= 1)
                for name, s in (("lab chaos", chaos), ("investigate", inv))
            ),
            *_waits(inv["phases_ms"]),
        ]
    )


def _waits(phases_ms: dict[str, float]) -> list[str]:
    """What of a black-box trial's own time is waiting where a white box is told: its settled
    read's quiet window and its TTL reads after each turn (a trial lets its place go before the
    first, so they count in its own seconds, not in the side's wall time)."""
    settle, ttl = phases_ms.get("settle", 0.0), phases_ms.get("ttl", 0.0)
    if not settle and not ttl:
        return []
    return [
        f"  investigate's own time includes its waits: the settled read {settle:.0f} ms and the TTL reads "
        f"{ttl:.0f} ms a trial, where lab chaos is told by its backend's events (the next trial starts "
        "during the settled read)"
    ]
