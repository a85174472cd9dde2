"""An interrupt storm: `lab chaos` is stopped again and again, at random (seeded, printed) moments
-- while its stack starts, mid-trial, once the trials are done (final reads, report, stack
down) -- by SIGINT to its process group (Ctrl-C in a terminal), SIGTERM to its pid or its group,
SIGHUP to its pid, and SIGKILL followed by `lab down`. After every interruption: no process of
the run is left (pidfiles, /proc command lines naming its run folder or ports, its process
group), its ports are free (so no Toxiproxy holds a toxic), and a signalled run exited
128 + N with a partial report; the next run starting cleanly is the next iteration itself.

    STORM_N=50 STORM_SEED=7 .venv/bin/python -m pytest tests/e2e/test_interrupt_storm.py -s
    make storm N=50

STORM_N defaults to 5, one of each kind (about a minute on 2 cores); the seed is random unless STORM_SEED is
set, and printed either way. The figures (runs, exit codes per signal, leftovers) are printed
and written to the test's tmp folder as storm.json.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from lab.stack import procs
from lab.stack.events import BackendEvents
from lab.stack.ports import is_free
from lab.common.wait import wait_until
from tests.cleanup import lab_down_after
from tests.helpers import isolated_env, run_lab, start_lab

ONLY = "profile=correct;fault=none|latency;refresh=settled"
TURNS = 5
TRIALS = 2  # 2 cells x 1 trial: the last turn of the run is the 10th chat.done
KINDS = ("INT-group", "TERM-pid", "TERM-group", "HUP-pid", "KILL-pid")
PHASES = ("start-up", "mid-trial", "trials-done")
STORM_N = int(os.environ.get("STORM_N", "5"))  # one of each kind: make storm N=50 for the long run


@dataclass
class Interruption:
    kind: str
    phase: str
    turn: int  # for mid-trial: after which chat.received (1..TRIALS * TURNS)

    @property
    def sig(self) -> signal.Signals:
        return {"INT": signal.SIGINT, "TERM": signal.SIGTERM, "HUP": signal.SIGHUP, "KILL": signal.SIGKILL}[
            self.kind.split("-")[0]
        ]

    @property
    def to_group(self) -> bool:
        return self.kind.endswith("group")


def _plan(n: int, seed: int) -> list[Interruption]:
    rng = random.Random(seed)
    kinds = [KINDS[i % len(KINDS)] for i in range(n)]
    rng.shuffle(kinds)
    return [Interruption(k, rng.choice(PHASES), rng.randint(1, TRIALS * TURNS)) for k in kinds]


def _default_dispositions() -> None:
    # What a terminal gives a command: a pytest run as a background job of a non-interactive
    # shell ignores SIGINT, and ignored signals are inherited across exec.
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_DFL)


def _leftovers(run_dir: Path, ports: list[int], pgid: int | None, tmp: Path | None = None) -> list[str]:
    """Live processes of the run: recorded in its pidfiles, command lines naming its run folder or
    one of its ports, or in the lab's process group (Chromium, Playwright's driver); and files
    left in its TMPDIR (the lab's, Playwright's and Chromium's temporary folders)."""
    found = [f"pidfile {p.name}: pid {p.pid} alive" for p in procs.recorded(run_dir) if p.alive()]
    marks = [str(run_dir)] + [str(p) for p in ports]
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        args = [a.decode(errors="replace") for a in argv if a]
        if procs.state(int(entry.name)) in (None, "Z", "X"):
            continue
        if any(m == a or a.endswith(":" + m) or a.startswith(m) for a in args for m in marks):
            found.append(f"pid {entry.name}: {' '.join(args)[:160]}")
    if pgid is not None:
        found += [f"pid {p} in the lab's process group" for p in procs.group_members(pgid)]
    found += [f"port {p} still bound" for p in ports if not is_free("127.0.0.1", p)]
    if tmp is not None:
        found += [f"temporary file left: {x.name}" for x in tmp.iterdir()]
    return sorted(set(found))


def _wait_for_phase(it: Interruption, proc: subprocess.Popen[str], run_dir: Path) -> bool:
    """Wait for the interruption's moment; False if the run ended before it came."""
    events = BackendEvents(run_dir / "backend.log", from_start=True)

    def count(name: str) -> int:
        events.poll()
        return sum(1 for e in events.all if e.get("event") == name)

    if it.phase == "start-up":
        # The stack is starting: Redis recorded, the rest not yet ready.
        ready = lambda: procs.read(run_dir, "redis") is not None  # noqa: E731
    elif it.phase == "mid-trial":
        ready = lambda: count("chat.received") >= it.turn  # noqa: E731
    else:
        ready = lambda: count("chat.done") >= TRIALS * TURNS  # noqa: E731
    wait_until(lambda: ready() or proc.poll() is not None, what=f"{it.phase} of run", timeout_s=120, interval_s=0.01)
    return proc.poll() is None


# The suite's 300 s per test is for one scenario; a storm is STORM_N runs (~10-15 s each here).
@pytest.mark.timeout(120 + 60 * STORM_N)
def test_interrupt_storm(tmp_path: Path) -> None:
    n = STORM_N
    seed = int(os.environ.get("STORM_SEED", random.SystemRandom().randrange(1 << 31)))
    print(f"\ninterrupt storm: {n} interruptions, seed {seed} (STORM_SEED={seed} to replay)")
    run_dir = tmp_path / "run"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**isolated_env(run_dir), "TMPDIR": str(tmp)}
    ports = [int(v) for k, v in env.items() if k.startswith("LAB_") and k.endswith("_PORT")]
    codes: dict[str, Counter[int]] = {k: Counter() for k in KINDS}
    missed = 0
    leftovers_total = 0
    rows = []
    with lab_down_after(env):  # a failed check mid-storm ends the loop: stop what that run left
        for i, it in enumerate(_plan(n, seed)):
            (run_dir / "backend.log").unlink(missing_ok=True)  # phases are read from this run's log
            reports = tmp_path / f"reports-{i:03d}"
            proc = start_lab(
                "chaos",
                "--trials",
                "1",
                "--seed",
                str(seed + i),
                "--only",
                ONLY,
                "--concurrency",
                "2",
                "--reports",
                str(reports),
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_default_dispositions,
            )
            try:
                hit = _wait_for_phase(it, proc, run_dir)
                if hit:
                    if it.to_group:
                        os.killpg(proc.pid, it.sig)
                    else:
                        proc.send_signal(it.sig)
                out = proc.communicate(timeout=120)[0]
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.communicate()
            code = proc.returncode
            if it.sig == signal.SIGKILL:
                down = run_lab(env, "down")
                assert down.returncode == 0, down.stderr
            # Chromium and Playwright's driver notice their parent's end by themselves: wait for it.
            try:
                wait_until(
                    lambda: not _leftovers(run_dir, ports, proc.pid, tmp),
                    what="nothing left",
                    timeout_s=30,
                    interval_s=0.05,
                )
            except Exception:
                pass
            left = _leftovers(run_dir, ports, proc.pid, tmp)
            leftovers_total += len(left)
            results = sorted(reports.glob("*/results.json"))
            partial = json.loads(results[-1].read_text()) if results else None
            row = {
                "i": i,
                "kind": it.kind,
                "phase": it.phase,
                "turn": it.turn,
                "hit": hit,
                "exit": code,
                "interrupted": partial and partial.get("interrupted"),
                "leftovers": left,
            }
            rows.append(row)
            print(
                f"  #{i:03d} {it.kind:<10} at {it.phase:<11}"
                + (f" (chat.received {it.turn})" if it.phase == "mid-trial" else " " * 19)
                + f" -> exit {code}, report {'interrupted' if row['interrupted'] else 'whole' if partial else 'none'}"
                + (", MISSED (the run had ended)" if not hit else "")
                + (f", LEFT: {left}" if left else ""),
                flush=True,
            )
            assert not left, f"#{i} {it}: left behind {left}\n{out}"
            if not hit:
                missed += 1
                assert code == 0, out  # it ended on its own before the signal: a valid tiny run
                continue
            codes[it.kind][code] += 1
            if it.sig == signal.SIGKILL:
                assert code == -signal.SIGKILL, out
                continue
            assert code == 128 + it.sig, f"#{i} {it}: exit {code}\n{out}"
            if it.phase == "mid-trial":
                # The trials had begun: a partial report says so.
                assert partial is not None and partial["interrupted"] is True, out
                assert partial["signal"] == it.sig.name, partial
            elif partial is not None and partial["interrupted"]:
                assert partial["signal"] == it.sig.name, partial
        summary = {
            "seed": seed,
            "runs": n,
            "missed": missed,
            "leftovers": leftovers_total,
            "exit_codes": {k: dict(c) for k, c in codes.items()},
            "rows": rows,
        }
        (tmp_path / "storm.json").write_text(json.dumps(summary, indent=2) + "\n")
        print(
            f"interrupt storm: {n} runs, {missed} missed (ended before the signal), leftovers "
            f"{leftovers_total}; exit codes: "
            + ", ".join(f"{k} {dict(c)}" for k, c in codes.items())
            + f"; {tmp_path / 'storm.json'}"
        )
        # The next run starts cleanly after the last interruption too.
        up = run_lab(env, "up")
        assert up.returncode == 0, up.stderr
        assert run_lab(env, "down").returncode == 0
        assert not _leftovers(run_dir, ports, None)
        assert missed <= n // 2, "most interruptions must land while the run is running"
