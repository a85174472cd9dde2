"""The shards' Indexed Job and the merge Job run on a node, watched until done: progress from
the runners' own progress lines (read from the kubelet's pod logs), the containers' measured
CPU and memory from the kubelet's summary, the merge's verdict as `lab merge` prints it and
its exit status as the run's."""

from __future__ import annotations

import calendar
import json
import re
import ssl
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lab.common.errors import LabError, NotReady
from lab.common.wait import wait_until
from lab.k8s.configs import PORTS
from lab.k8s.manifests import INDEX, Doc
from lab.k8s.node import Node


def log_lines(pod_logs: Path, pod: str, container: str) -> list[str]:
    """A container's output from the kubelet's CRI log files ("<time> <stream> <F|P> text")."""
    out: list[str] = []
    for path in sorted(pod_logs.glob(f"*_{pod}_*/{container}/*.log")):
        for line in path.read_text(errors="replace").splitlines():
            parts = line.split(" ", 3)
            out.append(parts[3] if len(parts) == 4 else "")
    return out


def usage(sample: dict[str, Any], seen: dict[str, dict[str, float]]) -> None:
    """Fold one kubelet summary into ``seen``: {"pod/container": cpu_s, peak_mib, wall_s}."""
    for pod in sample.get("pods", []):
        for c in pod.get("containers", []):
            key = f"{pod['podRef']['name']}/{c['name']}"
            row = seen.setdefault(key, {"cpu_s": 0.0, "peak_mib": 0.0, "wall_s": 0.0})
            cpu_ns = (c.get("cpu") or {}).get("usageCoreNanoSeconds")
            mem = (c.get("memory") or {}).get("workingSetBytes")
            if cpu_ns is not None:
                row["cpu_s"] = max(row["cpu_s"], cpu_ns / 1e9)
            if mem is not None:
                row["peak_mib"] = max(row["peak_mib"], mem / 2**20)
            started = c.get("startTime")
            if started:
                t0 = calendar.timegm(time.strptime(started, "%Y-%m-%dT%H:%M:%SZ"))
                row["wall_s"] = max(row["wall_s"], time.time() - t0)


def kubelet_summary() -> dict[str, Any]:
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE  # the kubelet's own certificate, on loopback
    url = f"https://127.0.0.1:{PORTS['kubelet']}/stats/summary"
    try:
        with urllib.request.urlopen(url, context=ctx, timeout=5) as r:
            return dict(json.loads(r.read()))
    except (OSError, ValueError):
        return {}


def finished(job: Doc) -> str | None:
    for c in job.get("status", {}).get("conditions", []):
        if c["type"] in ("Complete", "Failed") and c["status"] == "True":
            return str(c["type"])
    return None


def run_job(node: Node, job: Doc, container: str, deadline_s: float, say: Callable[[str], None],
            seen: dict[str, dict[str, float]]) -> tuple[str, list[Doc]]:  # fmt: skip
    """Create ``job`` and wait until it completes or fails; (outcome, its pods)."""
    name = job["metadata"]["name"]
    node.kubectl("apply", "-f", "-", stdin=json.dumps(job))
    start, said = time.monotonic(), [-10.0]

    def done() -> tuple[str, list[Doc]] | None:
        state = node.get("job", name)
        pods = list(node.get("pods", "-l", f"job-name={name}")["items"])
        usage(kubelet_summary(), seen)
        outcome = finished(state)
        if outcome is not None:
            return outcome, pods
        elapsed = time.monotonic() - start
        if elapsed - said[0] >= 10:  # a progress line every 10 s
            said[0] = elapsed
            say(f"  {name} {elapsed:4.0f} s: " + "; ".join(_pod_line(node, p, container) for p in _by_index(pods)))
        return None

    try:
        return wait_until(done, what=f"job {name} done", timeout_s=deadline_s, interval_s=2, transient=())
    except NotReady:
        raise LabError(
            f"job {name} not done after {deadline_s:.0f} s", "raise --deadline, or look at the pods' logs"
        ) from None


def _by_index(pods: list[Doc]) -> list[Doc]:
    return sorted(pods, key=lambda p: int(p["metadata"].get("annotations", {}).get(INDEX, 0)))


_PROGRESS = re.compile(r"\b(\d+/\d+ trials|\d+ trials in \d+ s)")


def _pod_line(node: Node, pod: Doc, container: str) -> str:
    """The pod's phase and its container's latest progress ("25/70 trials", "100 trials in 91 s")."""
    found = [m.group(1) for ln in log_lines(node.lay.pod_logs, pod["metadata"]["name"], container)
             for m in [_PROGRESS.search(ln)] if m]  # fmt: skip
    index = pod["metadata"].get("annotations", {}).get(INDEX)
    head = f"#{index} " if index is not None else ""
    return f"{head}{pod['status'].get('phase', '?')} {found[-1] if found else ''}".strip()


def exit_code(pod: Doc, container: str) -> int | None:
    for status in pod.get("status", {}).get("containerStatuses", []):
        if status["name"] == container:
            return status.get("state", {}).get("terminated", {}).get("exitCode")
    return None


def usage_table(seen: dict[str, dict[str, float]]) -> list[str]:
    """One line per container: CPU seconds, mean cores over its life, peak working set."""
    rows = []
    for key, row in sorted(seen.items()):
        cores = row["cpu_s"] / row["wall_s"] if row["wall_s"] else 0.0
        rows.append(f"  {key:44} {row['cpu_s']:7.1f} cpu-s  {cores:4.2f} cores  {row['peak_mib']:6.0f} MiB peak")
    return rows
