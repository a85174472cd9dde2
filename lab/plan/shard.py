"""Shards of the chaos matrix: a deterministic partition, and what identifies a run's plan.

Cells are cut by *column* (fault, its parameters, refresh point, turns): every attribution
verdict compares profiles within one column, so a shard holding whole columns can draw its
verdicts and top up its own undecided cells exactly as the unsharded run would. Each cell's
trial seeds depend only on the run's seed, the cell and the top-up round -- never on which
other cells run -- so shard K of N plans the very trials the unsharded run plans for its cells.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence

from lab.common.errors import UsageError
from lab.plan import ids
from lab.plan.schedule import Cell, fault_text

_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")
PORT_STRIDE = 100  # shard K's native stack: every lab port + K * PORT_STRIDE (side by side)


def parse(text: str) -> tuple[int, int]:
    """'2/3' -> (2, 3); K counts from 1."""
    m = _SHARD.match(text or "")
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)) <= 64:
        raise UsageError(
            f"--shard {text!r} is not K/N with 1 <= K <= N <= 64",
            "e.g. --shard 2/3 (the second of three shards), or make chaos SHARD=2/3",
        )
    return int(m.group(1)), int(m.group(2))


def from_arg(text: str | None) -> tuple[int, int] | None:
    """--shard's value: None when absent or empty (make passes SHARD= empty), else parse()."""
    return parse(text) if text and text.strip() else None


def column(cell: Cell) -> tuple[str, str, int]:
    return fault_text(cell.fault, cell.params), cell.refresh, cell.turns


def partition(cells: Sequence[Cell], n: int) -> list[list[int]]:
    """Per shard (index K-1), the indices of its cells in ``cells``: whole columns, the largest
    first, each to the least-loaded shard (ties: the lowest shard). Deterministic."""
    cols: dict[tuple[str, str, int], list[int]] = {}
    for i, c in enumerate(cells):
        cols.setdefault(column(c), []).append(i)
    load = [0] * n
    out: list[list[int]] = [[] for _ in range(n)]
    for idx in sorted(cols.values(), key=lambda ix: (-len(ix), ix[0])):
        k = min(range(n), key=lambda s: (load[s], s))
        out[k] += idx
        load[k] += len(idx)
    return [sorted(x) for x in out]


def cell_seed(seed: int, cell: Cell, round_no: int = 0) -> int:
    """The seed of a cell's plan in a top-up round: a pure function of the three."""
    return ids.group_seed(seed, cell.cell_id, round_no)


def fingerprint(cells: Sequence[Cell], trials: int, max_trials: int) -> str:
    """The matrix and its sizes: shards merge only when they planned the same run."""
    h = hashlib.sha256(f"{trials}/{max_trials}\n".encode())
    for c in cells:
        h.update(c.cell_id.encode() + b"\n")
    return h.hexdigest()[:16]


def lab_version() -> str:
    """The lab's version and a hash of the code that plans, runs and judges trials."""
    from lab import __version__
    from lab.common.config import ROOT as root

    h = hashlib.sha256()
    for sub in ("lab", "services/chat"):
        for f in sorted((root / sub).rglob("*.py")):
            h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes())
    return f"{__version__}+{h.hexdigest()[:12]}"


def check_fits(part: tuple[int, int], cells: Sequence[Cell]) -> None:
    """Bad input before anything starts: more shards than the matrix has columns (UsageError)."""
    k, n = part
    columns = len({column(c) for c in cells})
    if n > columns:
        raise UsageError(
            f"--shard {k}/{n}: the matrix has {columns} columns (fault / refresh / turns)",
            f"use at most {columns} shards, or widen the matrix with --only",
        )


def use_own_stack(part: tuple[int, int], mode: str) -> None:
    """Shard K runs beside the others: natively, its own run folder (LAB_RUN_DIR + "-shardKofN")
    and lab ports (each LAB_*_PORT, or its default, + K * PORT_STRIDE), set in the environment
    the stack is then made from (LabConfig.from_env)."""
    from lab.common.config import PORT_ENV, LabConfig

    k, n = part
    if mode != "native":
        return
    base = LabConfig.from_env()
    os.environ["LAB_RUN_DIR"] = f"{base.run_dir}-shard{k}of{n}"
    for name, env in PORT_ENV.items():
        os.environ[env] = str(base.ports[name] + k * PORT_STRIDE)
