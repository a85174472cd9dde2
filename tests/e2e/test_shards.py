"""`lab chaos --shard K/N` and `lab merge` on the real stack: a small matrix cut into 2 and into 3
shards, each shard a separate `lab chaos` process (side by side: its own ports and run folder);
the merge has the unsharded plan's cells and trial counts, and its verdicts are those computed
from the union of the shards' trials (trials.json, judged again by the one checker). Shards that
do not belong together are refused (exit 2): the refusals read results.json files, so they are
made by editing copies of real shard folders."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from lab.model.attribution import cell_stats, verdicts
from lab.commands.chaos import ChaosRun, build_matrix, parse_only
from lab.model.checker import check_safe
from lab.common.config import PORT_ENV
from lab.model.history import Trial
from lab.model.outcome import CellOutcome, TrialOutcome
from tests.cleanup import lab_down_after
from tests.helpers import free_ports, run_lab, start_lab

ONLY = "profile=correct|swallowed_errors;fault=none|down|latency:latency_ms=100;refresh=settled"
TRIALS, SEED = 4, 4242  # 4/4 vs 0/4: the smallest count whose intervals separate (a "causes" verdict)


def _env(tmp: Path, n: int) -> dict[str, str]:
    """Base ports whose every shard's ports (+ K * PORT_STRIDE) are free and this worker's."""
    from lab.plan.shard import PORT_STRIDE

    env = dict(os.environ)
    offsets = tuple(k * PORT_STRIDE for k in range(n + 1))
    env.update({name: str(p) for name, p in zip(PORT_ENV.values(), free_ports(len(PORT_ENV), offsets=offsets))})
    env["LAB_RUN_DIR"] = str(tmp / "run")
    return env


def _shard_env(env: dict[str, str], k: int, n: int) -> dict[str, str]:
    """Shard K of N's own run folder and ports, as lab.plan.shard.use_own_stack derives them."""
    from lab.plan.shard import PORT_STRIDE

    out = {**env, "LAB_RUN_DIR": f"{env['LAB_RUN_DIR']}-shard{k}of{n}"}
    out.update({v: str(int(env[v]) + k * PORT_STRIDE) for v in PORT_ENV.values()})
    return out


def _shards(tmp: Path, n: int) -> list[Path]:
    """N shard processes at once; each one's run folder."""
    env = _env(tmp, n)
    with ExitStack() as downs:
        # `lab down` in each shard's own run folder afterwards, whatever happened: a shard that
        # outlived its deadline is killed below, and its stack would be left running.
        for k in range(1, n + 1):
            downs.enter_context(lab_down_after(_shard_env(env, k, n)))
        return _run_shards(tmp, env, n)


def _run_shards(tmp: Path, env: dict[str, str], n: int) -> list[Path]:
    reports = tmp / f"reports-{n}"
    procs = [
        start_lab(
            "chaos",
            "--only",
            ONLY,
            "--trials",
            str(TRIALS),
            "--max-trials",
            str(TRIALS),
            "--seed",
            str(SEED),
            "--shard",
            f"{k}/{n}",
            "--reports",
            str(reports),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for k in range(1, n + 1)
    ]
    try:
        outs = [p.communicate(timeout=400)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    for k, (p, out) in enumerate(zip(procs, outs), 1):
        assert p.returncode == 0, f"shard {k}/{n}:\n{out}"
    # By K (the names start with each run's start time).
    folders = sorted(reports.glob(f"*-shard*of{n}"), key=lambda f: int(re.search(r"shard(\d+)of", f.name).group(1)))
    assert len(folders) == n, folders
    return folders


def _union_verdicts(folders: list[Path]) -> list[dict[str, Any]]:
    """The verdicts of the union of the shards' trials, judged again from trials.json."""
    cells = {}
    for f in folders:
        for c in json.loads((f / "results.json").read_text())["cells"]:
            from lab.commands.merge import _cell

            cells[c["cell_id"]] = CellOutcome(_cell(c))
        for rec in json.loads((f / "trials.json").read_text()):
            t = Trial.from_json(rec["trial"])
            cells[rec["cell_id"]].trials.append(TrialOutcome(None, t, check_safe(t)))
    return [v.as_json() for v in verdicts([cell_stats(o) for o in cells.values()])]


def _merge(folders: list[Path], out: Path) -> subprocess.CompletedProcess[str]:
    return run_lab(dict(os.environ), "merge", *map(str, folders), "--out", str(out), timeout=120)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[int, list[Path]]:
    tmp = tmp_path_factory.mktemp("shards")
    return {n: _shards(tmp, n) for n in (2, 3)}


@pytest.mark.parametrize("n", [2, 3])
def test_merged_shards_are_the_unsharded_plan_and_verdicts(runs: dict[int, list[Path]], n: int, tmp_path: Path) -> None:
    folders = runs[n]
    p = _merge(folders, tmp_path / "merged")
    assert p.returncode == 0, p.stdout + p.stderr
    merged = json.loads((tmp_path / "merged" / "results.json").read_text())
    plan = ChaosRun(None, build_matrix(parse_only(ONLY)), TRIALS, SEED, tmp_path).plans()  # type: ignore[arg-type]
    assert {c["cell_id"]: c["trials"] + c["unknown"] for c in merged["cells"]} == {
        c.cell_id: len(plans) for c, plans in plan
    }
    # The very trials the unsharded run plans (ids), and nothing else.
    ran = sorted(t for c in merged["cells"] for t in c["trial_ids"])
    assert ran == sorted(p.trial_id for _, plans in plan for p in plans)
    assert merged["verdicts"] == _union_verdicts(folders)
    assert [v["defect"] for v in merged["verdicts"] if v["verdict"] == "causes"] == ["swallowed_errors"], merged[
        "verdicts"
    ]
    assert [m["k"] for m in merged["merged_from"]] == list(range(1, n + 1))
    assert (tmp_path / "merged" / "report.html").is_file() and (tmp_path / "merged" / "junit.xml").is_file()
    # Failing trials' artifacts: linked from their shard folders.
    failing = [t for c in merged["cells"] for t in c["failing_trials"]]
    assert failing and all(
        (tmp_path / "merged" / "trials" / t).resolve().is_relative_to(folders[0].parent)
        for t in failing
        if (tmp_path / "merged" / "trials" / t).exists()
    )


def _copy(src: Path, dst: Path, **changes: Any) -> Path:
    shutil.copytree(src, dst, symlinks=True)
    r = json.loads((dst / "results.json").read_text())
    r.update(changes)
    (dst / "results.json").write_text(json.dumps(r))
    return dst


def test_bad_merges_are_refused_naming_what_differs(runs: dict[int, list[Path]], tmp_path: Path) -> None:
    two, three = runs[2], runs[3]
    cases = {
        "missing": ([three[0], three[2]], "missing shard(s) 2/3"),
        "twice": ([two[0], _copy(two[0], tmp_path / "again"), two[1]], "shard 1/2 given twice"),
        "mixed n": ([two[0], three[1]], "differs"),
        "seed": ([two[0], _copy(two[1], tmp_path / "seed", seed=SEED + 1)], "in seed"),
        "version": ([two[0], _copy(two[1], tmp_path / "ver", lab_version="0.0.0+other")], "in lab_version"),
        "matrix": ([two[0], _copy(two[1], tmp_path / "mx", matrix={"fingerprint": "x", "cells": 1})], "in matrix"),
        "not a shard": ([two[0], _copy(two[1], tmp_path / "plain", shard=None)], "not a shard"),
    }
    for name, (folders, want) in cases.items():
        if name == "not a shard":
            r = json.loads((folders[1] / "results.json").read_text())
            del r["shard"]
            (folders[1] / "results.json").write_text(json.dumps(r))
        p = _merge(folders, tmp_path / f"out-{name.replace(' ', '-')}")
        assert p.returncode == 2 and want in p.stderr and "Traceback" not in p.stderr, (name, p.stderr)
