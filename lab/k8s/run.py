"""`lab k8s run` and `lab k8s check`: deploy/k8s on the node, start to finish, and the node
removed afterwards however the run ends (a signal unwinds like Ctrl-C: lab.common.signals)."""

from __future__ import annotations

import json
import math
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from lab.common import signals
from lab.common.config import LabConfig, cache_dir, checkout, home
from lab.common.errors import UsageError
from lab.common.files import write_atomic
from lab.common.wait import wait_until
from lab.k8s import binaries, manifests
from lab.k8s.configs import NODE
from lab.k8s.images import lab_images
from lab.k8s.jobs import exit_code, log_lines, run_job, usage_table
from lab.k8s.manifests import SHARDS_JOB
from lab.k8s.node import Node

Say = Callable[[str], None]


def say_now(text: str) -> None:
    print(text, flush=True)  # progress, also when the output goes to a file (a CI log)


def state_dir() -> Path:
    return home() / "k8s"


def manifests_dir(given: str | None) -> Path:
    """``given`` (a folder of YAML files with deploy/k8s's objects), else the checkout's."""
    folder = Path(given) if given else checkout("lab k8s") / "deploy" / "k8s"
    if not folder.is_dir() or not any(folder.glob("*.yaml")):
        raise UsageError(f"--manifests {folder}: no *.yaml files there", "name deploy/k8s or a copy of it")
    return folder


def _fit(node: Node, job: manifests.Doc, shards: int, say: Say) -> None:
    """Say how many shards the node runs at once (from the pods' requests and its allocatable)."""
    alloc = node.get("node", NODE)["status"]["allocatable"]
    need = manifests.pod_requests(job)
    cpu, mem = manifests.quantity(alloc["cpu"]), manifests.quantity(alloc["memory"])
    at_once = min(shards, *(math.floor(have / need[k]) for k, have in (("cpu", cpu), ("memory", mem)) if need[k]))
    say(f"each shard asks {need['cpu']:.2f} CPU and {need['memory'] / 2**30:.2f} GiB; the node has {cpu:g} CPU and "
        f"{mem / 2**30:.1f} GiB: {at_once} of {shards} shards run at once")  # fmt: skip


def _down(node: Node, say: Say, keep: bool) -> list[str]:
    # A second Ctrl-C must not cut the removal short (it would leave the cluster running):
    # noted, and raised once everything is removed.
    with signals.deferred():
        done, left = node.down(keep_state=keep)
    say(f"cluster removed ({len(done)} steps)" + (f"; state kept in {node.lay.state}" if keep else ""))
    for line in left:
        say(f"  LEFT BEHIND: {line}")
    if not left:
        say("  nothing left behind: no process, mount, cgroup, interface, host file or iptables rule of the run")
    return left


def run(folder: Path, shards: int, seed: int, trials: int, deadline_s: float, keep: bool, reports: Path,
        say: Say = say_now) -> int:  # fmt: skip
    node = Node(state_dir(), binaries.bin_dir(cache_dir()), say)
    objects, merge = _rendered(folder, shards, seed, trials, node)  # bad manifests: refused before any build
    job = objects.pop()
    binaries.ensure(cache_dir(), say)
    images, aliases = lab_images(LabConfig.from_env(), say)
    code, t0 = 1, time.monotonic()
    try:
        node.up(images, aliases)
        say(f"cluster up in {time.monotonic() - t0:.0f} s")
        _fit(node, job, shards, say)
        node.kubectl("apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
        seen: dict[str, dict[str, float]] = {}
        t1 = time.monotonic()
        outcome, pods = run_job(node, job, "runner", deadline_s, say, seen)
        shards_s = time.monotonic() - t1
        say(f"{SHARDS_JOB}: {outcome} in {shards_s:.0f} s ({shards} pods)")
        for pod in pods:
            if exit_code(pod, "runner") not in (0, None):
                tail = log_lines(node.lay.pod_logs, pod["metadata"]["name"], "runner")[-15:]
                say(f"{pod['metadata']['name']} exited {exit_code(pod, 'runner')}:\n  " + "\n  ".join(tail))
        _, mpods = run_job(node, merge, "merge", 600, say, seen)
        for line in log_lines(node.lay.pod_logs, mpods[0]["metadata"]["name"], "merge"):
            print(line)
        merged = exit_code(mpods[0], "merge")
        code = merged if merged is not None else 1
        out = _keep_results(node, reports, seed, shards, seen, shards_s)
        say("\n".join(["measured use per container (kubelet summary):", *usage_table(seen)]))
        say(f"results: {out} (the shards' folders and merged-s{seed}); merge exit {code}")
    finally:
        left = _down(node, say, keep)
    return 1 if left and code == 0 else code


def _keep_results(node: Node, reports: Path, seed: int, shards: int, seen: dict[str, dict[str, float]],
                  shards_s: float) -> Path:  # fmt: skip
    """The results volume copied out of the cluster's folder (removed with it)."""
    out = reports / f"k8s-{time.strftime('%Y%m%d-%H%M%S')}-s{seed}-{shards}shards"
    shutil.copytree(node.lay.results, out, symlinks=True)
    write_atomic(out / "k8s-usage.json", json.dumps({"shards": shards, "shards_wall_s": round(shards_s, 1),
                                                      "containers": seen}, indent=1))  # fmt: skip
    return out


def _rendered(
    folder: Path, shards: int, seed: int, trials: int, node: Node
) -> tuple[list[manifests.Doc], manifests.Doc]:
    try:
        return manifests.render(manifests.load(folder), shards, seed, trials, node.lay.results)
    except (KeyError, ValueError) as exc:  # a missing object, or YAML that is not Kubernetes'
        raise UsageError(f"{folder}: not deploy/k8s's objects: {str(exc).strip(chr(39))}",
                         "start from a copy of deploy/k8s") from None  # fmt: skip


def check(folder: Path, shards: int, say: Say = say_now) -> int:
    """No kubelet: the manifests applied to a real API server (a server-side dry run, then for
    real) and the Job controller's pods inspected. Exit 0 when they are as the run needs."""
    node = Node(state_dir(), binaries.bin_dir(cache_dir()), say)
    objects, _ = _rendered(folder, shards, 1, 1, node)
    binaries.ensure(cache_dir(), say)
    listed = json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})
    try:
        node.control_plane()
        say(node.kubectl("apply", "--dry-run=server", "-f", "-", stdin=listed).strip())
        node.kubectl("apply", "-f", "-", stdin=listed)
        pods: list[manifests.Doc] = []

        def made() -> bool:
            pods[:] = node.get("pods", "-l", f"job-name={SHARDS_JOB}")["items"]
            return len(pods) >= shards

        wait_until(made, what=f"the Job controller's {shards} pods", timeout_s=60, interval_s=0.5)
        found = manifests.problems(pods, shards)
        for line in found:
            say(f"  PROBLEM: {line}")
        say(
            f"{len(pods)} pods, indexes 0..{shards - 1}: "
            + ("as the run needs" if not found else f"{len(found)} problems")
        )
        code = 0 if not found else 1
    finally:
        left = _down(node, say, keep=False)
    return 1 if left else code
