"""`lab down` after a test that started a stack, an engine or a run of its own, whatever
happened in the test: a failed assertion, a signal step that timed out, a `lab` killed with
SIGKILL by the test's own `finally`. Killing `lab` is no clean-up: what it started (the
services, a private dockerd and its containerd) is detached and outlives it, and one such
leftover made the next compose module's engine fail to start (12 errors).

After a block that ended well with nothing of the lab's left -- no recorded service alive, no
process marked as started for one of its run folders, no compose project's state -- there is
nothing for `lab down` to stop, and it is not run: a `lab` process costs ~0.8 s (0.66 s of CPU,
2026-12-07), after each of the suite's ~300 runs. Whatever is left, `lab down` stops as before."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lab.stack import procs
from lab.stack.compose.app import STATE as COMPOSE_APP_STATE
from tests.helpers import run_lab


def _nothing_to_stop(env: dict[str, str]) -> bool:
    """No process of the lab's alive for env's run folder or its siblings (run-investigate,
    run-proxy, ...) and no compose project a run left: what `lab down` (native) would find."""
    if "LAB_RUN_DIR" not in env:
        return False
    run = Path(env["LAB_RUN_DIR"])
    for d in (run, *run.parent.glob(run.name + "-*")):
        if not d.is_dir():
            continue
        if (d / COMPOSE_APP_STATE).exists() or any(p.alive() for p in procs.recorded(d)) or procs.unrecorded(d):
            return False
    return True


@contextmanager
def lab_down_after(env: dict[str, str], *args: str, timeout: float = 300) -> Iterator[None]:
    """Run the block, then `lab down ARGS` (e.g. "--mode", "compose") in ``env``'s run folder.

    Native `lab down` also stops what a killed `lab investigate`, `lab init` or `lab proxy up`
    left in that folder's siblings; compose `lab down` also the private engine it started. A
    `lab down` that fails fails a test that passed; when the test already failed, its own error
    stays the one reported and the down's output is added to it as a note."""
    try:
        yield
    except BaseException as exc:
        down = run_lab(env, "down", *args, timeout=timeout)
        if down.returncode != 0:
            exc.add_note(f"and `lab down {' '.join(args)}` after it exited {down.returncode}: {down.stderr[-2000:]}")
        raise
    if not args and _nothing_to_stop(env):
        return
    down = run_lab(env, "down", *args, timeout=timeout)
    assert down.returncode == 0, (
        f"`lab down {' '.join(args)}` exited {down.returncode}; something may be left running:\n"
        + down.stdout
        + down.stderr
    )
