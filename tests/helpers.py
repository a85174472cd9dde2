"""Helpers for tests that start stacks of their own: free ports, an isolated environment, and
the `lab` command run as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from lab.common.config import PORT_ENV, ROOT


def free_ports(n: int, lo: int = 20000, hi: int = 32000, offsets: tuple[int, ...] = (0,)) -> list[int]:
    """n distinct free ports below the kernel's ephemeral range (32768+), so no outgoing
    connection can take one between this check and the service binding it. The suite's fixed
    ports (tests/conftest.py) are never chosen, and each pytest-xdist worker draws from a block of
    its own, so two workers cannot both find a port free before either binds it.

    ``offsets``: each chosen port P is one whose P + offset is free too, for every offset, inside
    this worker's block -- for a command that derives more ports from the ones it is given
    (``lab chaos --shard K/N`` adds K * PORT_STRIDE); a derived port outside the block could be
    held by another worker's stack."""
    import random

    from lab.common.config import CHROMIUM_UNSAFE_PORTS
    from lab.stack.ports import is_free
    from tests.conftest import FIXED_PORTS as fixed
    from tests.conftest import WORKER, WORKERS

    block = (hi - lo) // WORKERS
    lo, hi = lo + WORKER * block, lo + (WORKER + 1) * block - max(offsets)
    rng = random.SystemRandom()
    chosen: list[int] = []
    taken: set[int] = set()
    while len(chosen) < n:
        p = rng.randrange(lo, hi)
        ports = [p + o for o in offsets]
        if all(q not in taken and q not in fixed and q not in CHROMIUM_UNSAFE_PORTS for q in ports) and all(
            is_free("127.0.0.1", q) for q in ports
        ):
            chosen.append(p)
            taken.update(ports)
    return chosen


def isolated_env(run_dir: Path, **extra: str) -> dict[str, str]:
    """This process's environment with every lab port free and its own run folder."""
    env = dict(os.environ)
    env.update({name: str(p) for name, p in zip(PORT_ENV.values(), free_ports(len(PORT_ENV)))})
    env["LAB_RUN_DIR"] = str(run_dir)
    env.update(extra)
    return env


def run_lab(
    env: dict[str, str], *args: str, timeout: float = 600, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """The `lab` command as a user runs it; ``stdin``: what it reads (default: nothing, not a terminal)."""
    return subprocess.run(
        [sys.executable, "-m", "lab", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        input=stdin if stdin is not None else "",
    )


def start_lab(*args: str, env: dict[str, str], **popen: Any) -> subprocess.Popen[str]:
    """The `lab` command started as a user starts it (this checkout's Python, from the repository
    root, text output), for tests that signal, watch or stop it while it runs."""
    return subprocess.Popen([sys.executable, "-m", "lab", *args], env=env, cwd=ROOT, text=True, **popen)


def run_async(coro: Any) -> Any:
    """``asyncio.run`` in a thread of its own: once pytest-playwright's sync API has started in
    this process, the main thread has a running event loop and asyncio.run refuses it."""
    import asyncio

    from lab.common.wait import in_own_thread

    return in_own_thread(lambda: asyncio.run(coro), "test-async")


def judged(cell: dict[str, Any], planned: int) -> int:
    """A `lab chaos` cell's judged trials (results.json): every planned trial either judged or
    unknown with its reason -- a loaded machine may leave one unknown, never a pass or a loss.
    Skips the test (saying why) when the machine let none be judged: nothing was tested."""
    import pytest  # only the tests that ask need it

    # Every trial it ran is judged or unknown with its reason; an unknown one may have been
    # replaced by another (results.json lists both), so the run holds at least the planned count.
    ran = cell["trials"] + cell["unknown"]
    assert ran == len(cell["trial_ids"]) >= planned and len(cell["unknown_reasons"]) == cell["unknown"], cell
    assert all(cell["unknown_reasons"].values()), cell["unknown_reasons"]
    if not cell["trials"]:
        pytest.skip(f"{cell['cell_id']}: the machine let no trial be judged: {cell['unknown_reasons']}")
    return int(cell["trials"])
