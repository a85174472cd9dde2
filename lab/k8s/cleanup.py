"""What a node leaves on the machine, found and removed: processes started for the run (the
lab's run mark in their environment, containerd's shims included), the pods' processes (every
cgroup under CGROUP_ROOT), mounts under the run's folders (the kubelet's volumes, containerd's
snapshots and network namespaces), the pods' bridge, files the kubelet and CNI write at fixed
host paths, and iptables rules (none are expected: compared with a snapshot taken at start).

A record of the machine before the start (``host.json`` in the state folder) lets a later
`lab k8s down` -- after a SIGKILLed run -- remove exactly what the run added.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

from lab.common.files import write_atomic
from lab.k8s.configs import BRIDGE, CGROUP_ROOT, Layout
from lab.stack import procs

# Written by the kubelet and libcni at fixed paths, whatever the configuration says.
HOST_DIRS = (Path("/var/lib/kubelet"), Path("/var/log/containers"), Path("/var/log/pods"), Path("/var/lib/cni"))
CGROUPS = Path("/sys/fs/cgroup")
MOUNTINFO = Path("/proc/self/mountinfo")


def host_files() -> list[str]:
    """Every file and folder under HOST_DIRS (and the folders themselves)."""
    out: list[str] = []
    for top in HOST_DIRS:
        if top.exists() or top.is_symlink():
            out.append(str(top))
            out.extend(str(p) for p in top.rglob("*"))
    return sorted(out)


def iptables_rules() -> list[str]:
    """The rules of every table, without counters and comments (what a run must not change)."""
    try:
        res = subprocess.run(["iptables-save"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return sorted(
        line.split("[")[0].strip() if line.startswith(":") else line
        for line in res.stdout.splitlines()
        if line and not line.startswith("#")
    )


def record_host(lay: Layout) -> None:
    write_atomic(lay.state / "host.json", json.dumps({"files": host_files(), "iptables": iptables_rules()}))


def _recorded_host(lay: Layout) -> dict[str, list[str]]:
    try:
        data = json.loads((lay.state / "host.json").read_text())
        return {"files": list(data["files"]), "iptables": list(data["iptables"])}
    except (OSError, ValueError, KeyError):
        return {"files": [], "iptables": []}


def mounts_under(*folders: Path) -> list[str]:
    """Mount points at or below ``folders``, deepest (latest) first: the order to unmount."""
    found = []
    for line in MOUNTINFO.read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if any(point == str(f) or point.startswith(f"{f}/") for f in folders):
            found.append(point)
    return list(reversed(found))


def cgroup_dirs() -> list[Path]:
    """Every cgroup under CGROUP_ROOT in every hierarchy, deepest first."""
    out: list[Path] = []
    for hierarchy in CGROUPS.iterdir() if CGROUPS.is_dir() else []:
        top = hierarchy / CGROUP_ROOT.lstrip("/")
        if top.is_dir():
            out.extend(sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)))
            out.append(top)
    return out


def make_cgroup_root() -> None:
    """CGROUP_ROOT in every cgroup v1 hierarchy (the kubelet refuses a root it cannot find), with
    the parent's CPUs and memory nodes (an empty cpuset admits no process)."""
    for hierarchy in CGROUPS.iterdir() if CGROUPS.is_dir() else []:
        if hierarchy.name == "unified" or not (hierarchy / "cgroup.procs").exists():
            continue
        top = hierarchy / CGROUP_ROOT.lstrip("/")
        top.mkdir(exist_ok=True)
        for name in ("cpuset.cpus", "cpuset.mems"):
            if (hierarchy / name).exists():
                (top / name).write_text((hierarchy / name).read_text())


def cgroup_pids() -> set[int]:
    pids: set[int] = set()
    for d in cgroup_dirs():
        try:
            pids |= {int(x) for x in (d / "cgroup.procs").read_text().split()}
        except (OSError, ValueError):
            continue
    return pids


def bridge_exists() -> bool:
    return Path(f"/sys/class/net/{BRIDGE}").exists()


def leftovers(lay: Layout) -> list[str]:
    """What the run left on the machine, one line each (empty: nothing)."""
    out = [f"process {p.pid} {p.name}" for p in procs.recorded(lay.state) + procs.unrecorded(lay.state) if p.alive()]
    out += [f"pod process {pid}" for pid in sorted(cgroup_pids())]
    out += [f"mount {m}" for m in mounts_under(lay.state, lay.run)]
    out += [f"cgroup {d}" for d in cgroup_dirs()]
    out += [f"interface {BRIDGE}"] if bridge_exists() else []
    before = _recorded_host(lay)
    if (lay.state / "host.json").exists():
        out += [f"file {f}" for f in sorted(set(host_files()) - set(before["files"]))]
        now = iptables_rules()
        out += [f"iptables rule added: {r}" for r in sorted(set(now) - set(before["iptables"]))]
    out += [f"folder {d}" for d in (lay.run,) if d.exists()]
    return out


def remove(lay: Layout) -> list[str]:
    """Stop and remove everything ``leftovers`` finds (the state folder last); what was done."""
    done: list[str] = []
    # The kubelet first (it would restart what goes), etcd and containerd last.
    order = ["kubelet", "scheduler", "controller-manager", "apiserver", "etcd", "containerd"]
    recorded = sorted(procs.recorded(lay.state), key=lambda p: order.index(p.name) if p.name in order else -1)
    for info in recorded + procs.unrecorded(lay.state):
        done.append(f"{info.name}: {procs.stop(info, lay.state)}")
    for pid in cgroup_pids():  # the pods' processes, if the kubelet could not stop them
        try:
            os.kill(pid, signal.SIGKILL)
            done.append(f"pod process {pid}: killed")
        except ProcessLookupError:
            pass
    for point in mounts_under(lay.state, lay.run):
        if subprocess.run(["umount", point], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", point], capture_output=True)  # busy: detached, freed when idle
        done.append(f"unmounted {point}")
    for d in cgroup_dirs():
        try:
            d.rmdir()
        except OSError:
            pass  # a process still dying: reported by leftovers()
    if bridge_exists():
        subprocess.run(["ip", "link", "delete", BRIDGE], capture_output=True)
        done.append(f"removed interface {BRIDGE}")
    if (lay.state / "host.json").exists():
        before = set(_recorded_host(lay)["files"])
        for f in sorted(set(host_files()) - before, key=len, reverse=True):  # children before parents
            path = Path(f)
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
    shutil.rmtree(lay.run, ignore_errors=True)
    return done
