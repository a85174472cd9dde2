"""`lab merge`: shards of one `lab chaos` run into one verdict.

Each shard's results.json names its shard (K of N), the run's seed, the matrix's fingerprint and
the lab's version: shards of different runs, a missing shard or a shard given twice are refused
with what differs (exit 2). Cell counts add (a cell lies in one shard: whole columns are cut,
lab/plan/shard.py), Wilson intervals and attribution verdicts are recomputed from the merged counts,
and the exit status follows the same rule as an unsharded run.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, TextIO

from lab.model.attribution import METRICS, CellStats, points_one_way, verdicts
from lab.common.errors import UsageError
from lab.report import decide, junit_xml, summary, write_run
from lab.plan.schedule import Cell

_SAME = ("seed", "mode", "lab_version", "matrix")


def load(folder: Path) -> dict[str, Any]:
    path = folder / "results.json" if folder.is_dir() else folder
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(
            f"{folder}: no readable results.json ({exc})", "give shard run folders of lab chaos --shard"
        ) from None
    if not isinstance(data, dict) or "shard" not in data:
        raise UsageError(
            f'{folder}: not a shard (its results.json has no "shard")',
            "merge the folders of lab chaos --shard K/N runs (make chaos SHARD=K/N)",
        )
    data["_dir"] = str(path.parent.resolve())
    return data


def check(shards: list[dict[str, Any]]) -> int:
    """N, after refusing shards that do not belong together (UsageError naming what differs)."""
    first = shards[0]
    for s in shards[1:]:
        for key in (*_SAME, "n"):
            a, b = (first["shard"]["n"], s["shard"]["n"]) if key == "n" else (first.get(key), s.get(key))
            if a != b:
                raise UsageError(
                    f"{s['_dir']} differs from {first['_dir']} in {key}: {b!r} vs {a!r}",
                    "merge only the shards of one run: the same --seed, matrix (--only, --trials) and lab version",
                )
    n = first["shard"]["n"]
    seen: dict[int, str] = {}
    for s in shards:
        k = s["shard"]["k"]
        if k in seen:
            raise UsageError(f"shard {k}/{n} given twice: {seen[k]} and {s['_dir']}", "give each shard once")
        seen[k] = s["_dir"]
    missing = sorted(set(range(1, n + 1)) - set(seen))
    if missing:
        cmds = "; ".join(f"make chaos SHARD={k}/{n} SEED={first['seed']}" for k in missing)
        raise UsageError(f"missing shard(s) {', '.join(f'{k}/{n}' for k in missing)}", f"run {cmds}, then merge again")
    return n


def _cell(c: dict[str, Any]) -> Cell:
    return Cell(
        tuple(c["defects"]), c["fault"], c["refresh"], int(c["turns"]), tuple(sorted(c["fault_params"].items()))
    )


def stats_of(c: dict[str, Any]) -> CellStats:
    """A results.json cell back as CellStats (the counts the verdicts are drawn from)."""
    return CellStats(
        _cell(c),
        c["trials"],
        c["unknown"],
        c["failed"],
        {m: c["rates"][m]["k"] for m in METRICS},
        dict(c["anomalies"]),
        c["sends"],
        c["acknowledged"],
        c["status"],
        c.get("reason", ""),
        c.get("seconds_per_trial", 0.0),
        list(c.get("failing_trials", [])),
        dict(c.get("unknown_reasons", {})),
        list(c.get("trial_ids", [])),
    )


def add(a: CellStats, b: CellStats) -> CellStats:
    """Two runs' counts of one cell, summed (statuses: unexercised > invalid > valid)."""
    rank = {"valid": 0, "invalid": 1, "unexercised": 2}
    worse = a if rank[a.status] >= rank[b.status] else b
    return CellStats(
        a.cell,
        a.trials + b.trials,
        a.unknown + b.unknown,
        a.failed + b.failed,
        {m: a.with_metric[m] + b.with_metric[m] for m in METRICS},
        {k: a.anomalies.get(k, 0) + b.anomalies.get(k, 0) for k in {*a.anomalies, *b.anomalies}},
        a.sends + b.sends,
        a.acked_sends + b.acked_sends,
        worse.status,
        worse.reason,
        (a.seconds_per_trial + b.seconds_per_trial) / 2,
        a.failing_trials + b.failing_trials,
        {**a.unknown_reasons, **b.unknown_reasons},
        a.trial_ids + b.trial_ids,
    )


def merge(folders: list[Path], out_dir: Path, out: TextIO = sys.stdout) -> int:
    if not folders:
        raise UsageError("no shard folders given", "lab merge reports/<shard 1> reports/<shard 2> ... --out DIR")
    shards = sorted((load(f) for f in folders), key=lambda s: s["shard"]["k"])
    n = check(shards)
    order = {cid: i for s in shards for i, cid in enumerate(s["shard"]["cells"])}
    merged: dict[str, CellStats] = {}
    home: dict[str, int] = {}
    for s in shards:
        for c in s["cells"]:
            st = stats_of(c)
            cid = st.cell.cell_id
            merged[cid] = add(merged[cid], st) if cid in merged else st
            home.setdefault(cid, s["shard"]["k"])
    stats = sorted(merged.values(), key=lambda x: (home[x.cell.cell_id], order.get(x.cell.cell_id, 0)))
    vs = verdicts(stats)
    interrupted = any(s.get("interrupted") for s in shards)
    decision = decide(stats, vs, interrupted)
    first = shards[0]
    out_dir.mkdir(parents=True, exist_ok=True)
    _link_trials(shards, out_dir)
    results = {
        "run_id": out_dir.name,
        "seed": first["seed"],
        "mode": first["mode"],
        "lab_version": first["lab_version"],
        "matrix": first["matrix"],
        "trials_per_cell": first.get("trials_per_cell"),
        "max_trials_per_cell": first.get("max_trials_per_cell"),
        "seconds": round(sum(s.get("seconds", 0) for s in shards), 1),
        "interrupted": interrupted,
        "merged_from": [{"k": s["shard"]["k"], "n": n, "dir": s["_dir"]} for s in shards],
        "cells": [s.as_json() for s in stats],
        "verdicts": [v.as_json() for v in vs],
        "replay": {k: v for s in shards for k, v in s.get("replay", {}).items()},
        "artifacts": {k: v for s in shards for k, v in s.get("artifacts", {}).items()},
        "exit": {"code": decision.exit_code, "reasons": decision.reasons},
    }
    undecided = _undecided([v for v in vs if points_one_way(v, merged)], home, first, n)
    results["undecided"] = undecided
    write_run(out_dir, results, junit_xml(stats, decision), out_dir.parent, latest_name="latest-merge")
    replay = next(iter(results["replay"].values()), None)
    print(f"lab merge: {n} shards of seed {first['seed']} ({len(stats)} cells)", file=out)
    print(
        summary(
            stats,
            decision,
            out_dir,
            results["seconds"],
            sum(s.trials + s.unknown for s in stats),
            verdicts=vs,
            replay=replay,
        ),
        file=out,
    )
    if undecided:
        print("Undecided after the merge (more trials would tell):", file=out)
        for u in undecided:
            print(f"  {u['defect']} ({u['metric']}) under {u['fault']} / {u['refresh']}: {u['command']}", file=out)
    return decision.exit_code


def _undecided(vs: list[Any], home: dict[str, int], first: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """Verdicts more trials could decide, and the shard command that would top them up."""
    out = []
    trials = int(first.get("trials_per_cell") or 5)
    cap = int(first.get("max_trials_per_cell") or 15)
    for v in vs:
        k = home[v.cells.alone] if v.cells else 0
        out.append(
            {
                "defect": v.defect,
                "metric": v.metric,
                "fault": v.fault,
                "refresh": v.refresh,
                "cells": list(v.cells or ()),
                "shard": k,
                "command": f"make chaos SHARD={k}/{n} SEED={first['seed']} TRIALS={trials} MAX_TRIALS={2 * cap} "
                "(then merge its folder in place of the old one)",
            }
        )
    return out


def _link_trials(shards: list[dict[str, Any]], out_dir: Path) -> None:
    """Failing trials' artifacts stay in their shard folders; trials/<id> links to them."""
    trials = out_dir / "trials"
    for s in shards:
        src = Path(s["_dir"]) / "trials"
        if not src.is_dir():
            continue
        trials.mkdir(exist_ok=True)
        for t in src.iterdir():
            link = trials / t.name
            if not link.exists() and not link.is_symlink():
                os.symlink(os.path.relpath(t, trials), link)
