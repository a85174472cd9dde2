"""Where the CPU goes while the lab runs: every process of the browser (renderers, GPU, the
Playwright driver), the backend, Redis + Toxiproxy and the runner, sampled from /proc."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from lab.stack.native import NativeStack


def _tick_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _tree(pid: int) -> list[int]:
    """pid and its live descendants."""
    parent: dict[int, int] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            parent[int(entry)] = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    out: list[int] = []
    todo = [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += [c for c, pp in parent.items() if pp == p]
    return out


def _browser_part(pid: int) -> str:
    """Which part of the browser a process of this process's tree is."""
    try:
        # Chromium rewrites its command line into one space-separated string: split on both.
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").split()
    except OSError:
        return "other"
    exe = Path(cmd[0].decode(errors="replace")).name if cmd else ""
    if exe == "node" or exe.endswith("node"):
        return "playwright driver (node)"
    kind = next((a.split(b"=", 1)[1].decode() for a in cmd if a.startswith(b"--type=")), None)
    if "chrom" in exe:
        return f"chromium {kind}" if kind else "chromium main"
    return "other"


class CpuSplit:
    """CPU seconds per role over a measured stretch: the browser (Chromium and Playwright's
    driver, this process's children), the backend, the runner (this process), Redis+Toxiproxy.
    The browser (Playwright's driver and every Chromium process) is sampled every 0.25 s while
    the stretch runs, and split by process type (main, renderers, gpu, utility): where one
    process is near one core, it -- not the machine -- limits the run. (A process's last
    0.25 s before it exits can be missed.)"""

    SAMPLE_S = 0.25

    def __init__(self, stack: NativeStack) -> None:
        self.roles = {
            "backend": [stack.service("backend").pid],
            "redis+toxiproxy": [stack.service("redis").pid, stack.service("toxiproxy").pid],
        }
        self._seen: dict[int, tuple[str, float, float]] = {}  # pid -> (part, ticks at start, last)
        self._done = threading.Event()

    def _sample(self) -> None:
        while True:
            for pid in _tree(os.getpid())[1:]:
                ticks = _tick_seconds(pid)
                part, first, _ = self._seen.get(pid, (None, ticks, 0.0))
                self._seen[pid] = (part or _browser_part(pid), first, ticks)
            if self._done.wait(self.SAMPLE_S):
                return

    def parts(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for part, first, last in self._seen.values():
            out[part] = out.get(part, 0.0) + max(0.0, last - first)
        return out

    def _now(self) -> dict[str, float]:
        t = os.times()
        out = {role: sum(_tick_seconds(p) for pid in pids for p in _tree(pid)) for role, pids in self.roles.items()}
        out["runner"] = t.user + t.system
        return out

    def __enter__(self) -> "CpuSplit":
        self.t0, self.start = time.monotonic(), self._now()
        self._sampler = threading.Thread(target=self._sample, name="cpu-sampler", daemon=True)
        self._sampler.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._sampler.join(5)
        end = self._now()
        self.wall = time.monotonic() - self.t0
        self.used = {k: max(0.0, end[k] - self.start.get(k, 0.0)) for k in end}
        # The browser from the sampled processes: Chromium's children are reaped by Chromium,
        # not always through to this process, so os.times() misses most of their CPU.
        self.used["browser"] = sum(v for k, v in self.parts().items() if k != "other")

    def text(self) -> str:
        total = sum(self.used.values()) or 1.0
        cores = os.cpu_count() or 1
        parts = ", ".join(
            f"{k} {v:.1f} s ({100 * v / total:.0f}%)" for k, v in sorted(self.used.items(), key=lambda kv: -kv[1])
        )
        top = sorted(self.parts().items(), key=lambda kv: -kv[1])
        browser = ", ".join(
            f"{k} {v:.1f} s ({100 * v / self.wall:.0f}% of a core)" for k, v in top if v >= 0.05 and k != "other"
        )
        return (
            f"{total:.1f} CPU-s in {self.wall:.1f} s wall ({100 * total / (self.wall * cores):.0f}% "
            f"of {cores} cores): {parts}\n  the browser by process (sampled): {browser}"
        )
