"""What a test session left running: processes, mounts, network interfaces, containers and the
private engines' exec root folders of the lab that did not exist when the session started and
still exist after every test and fixture ended (tests/conftest.py runs the check and fails the
run on any).

Why: a test once SIGKILLed `lab up` without a `lab down`; its private dockerd and containerd ran
on after the suite, and the next module's engine could not start (12 errors, far from the cause).
The check names such a leftover in the run that made it.

Whose a process is: the session sets LAB_TEST_SESSION in its environment at start; every process
a test starts (the lab, its services, a private dockerd and its containerd, Chromium) inherits
it, and /proc/PID/environ shows it even after the process was re-parented. A process carrying
another session's value belongs to that session (a suite someone runs beside this one) and is
never flagged. A process without the variable (its environment rebuilt, or not readable) is
flagged when its command line or working directory points into paths only the tests use: this
session's pytest tmp folder, the test engines' data root (.lab/docker-tests) or the session
stacks' run folders (.lab/run/pytest*). Mounts, interfaces and containers carry no environment:
a new one counts unless a live Docker engine that is not this session's owns it (a developer's
`make up MODE=compose` beside the suite keeps its own).

Temporary files: the session gives every process it starts a temporary folder of its own
(TMPDIR, before the workers start); what is in it when the session ends was left by a test, the
lab or an app the lab ran (seen: a target stopped by its signal kept its SQLite folder in /tmp,
one per run, for weeks). ``temp_left`` lists it.

Pure functions over snapshots (``leftovers``) are unit-tested in tests/unit/test_leftovers.py;
``take`` reads the machine.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

SESSION_VAR = "LAB_TEST_SESSION"
# Interfaces Docker makes: compose networks' bridges, the default bridge, containers' veth pairs.
LINK_PREFIXES = ("br-", "docker", "veth")
DEFAULT_DOCKER_HOST = "unix:///var/run/docker.sock"


@dataclass(frozen=True)
class Proc:
    pid: int
    start_ticks: int  # with the pid, the identity of a process: pids are recycled
    ppid: int
    pgid: int
    argv: tuple[str, ...]
    cwd: str
    session: str | None  # its LAB_TEST_SESSION; None when unset or its environment is unreadable

    @property
    def key(self) -> tuple[int, int]:
        return (self.pid, self.start_ticks)

    def text(self) -> str:
        return f"pid {self.pid} ({' '.join(self.argv)[:200]}; cwd {self.cwd or '?'})"


@dataclass(frozen=True)
class Link:
    name: str
    master: str | None  # the bridge a veth is attached to


@dataclass(frozen=True)
class Container:
    host: str
    id: str
    name: str
    files: str = ""  # its compose labels: project, working dir, config files (an override in a run folder)


@dataclass(frozen=True)
class Snapshot:
    procs: tuple[Proc, ...] = ()
    mounts: frozenset[str] = frozenset()
    links: tuple[Link, ...] = ()
    containers: tuple[Container, ...] = ()
    # The private engines' exec roots (/run/chaoslab-*): one left behind fails the next run's
    # compose test, which checks that none is left.
    folders: frozenset[str] = frozenset()
    # Per reachable engine (DOCKER_HOST form): the bridge interfaces of its networks.
    bridges: dict[str, frozenset[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Marks:
    """What ties a leftover to this session."""

    session: str
    own_pid: int
    paths: tuple[str, ...]  # a process without the session variable pointing here is ours
    mount_roots: tuple[str, ...]  # a new mount under one of these is ours unless a foreign engine owns it
    kept_groups: frozenset[int] = frozenset()  # --lab-keep-stack: the session stacks' process groups


@dataclass(frozen=True)
class Leftover:
    kind: str  # process, mount, folder, interface, container, temp file
    what: str
    proc: Proc | None = None
    container: Container | None = None

    def line(self) -> str:
        return f"{self.kind} {self.what}"


def _under(path: str, prefixes: Iterable[str]) -> bool:
    # Prefixes, not folders: "/run/chaoslab-" covers every private engine's exec root.
    return any(path.startswith(r) for r in prefixes)


def _within(path: str, folders: Iterable[str]) -> bool:
    # Folders: an engine on .lab/docker owns nothing in .lab/docker-tests.
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


def _points_into(p: Proc, roots: Iterable[str]) -> bool:
    roots = tuple(roots)
    return _under(p.cwd, roots) or any(root in a for a in p.argv for root in roots)


def dockerd_host(argv: tuple[str, ...]) -> str:
    """The socket a dockerd serves (-H/--host), DOCKER_HOST style."""
    for i, a in enumerate(argv):
        if a in ("-H", "--host") and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--host="):
            return a.split("=", 1)[1]
    return DEFAULT_DOCKER_HOST


def _dockerd_roots(argv: tuple[str, ...]) -> list[str]:
    """The folders a dockerd mounts under: its data root and exec root (and their defaults)."""
    roots = []
    for flag, default in (("--data-root", "/var/lib/docker"), ("--exec-root", "/var/run/docker")):
        value = next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a == flag), None)
        value = value or next((a.split("=", 1)[1] for a in argv if a.startswith(flag + "=")), default)
        roots.append(value)
    # The private engine's exec root is <run>/exec: its socket and netns mounts sit in <run>.
    roots += [str(Path(r).parent) for r in roots if r.startswith("/run/chaoslab-")]
    return roots


def _is_ours(p: Proc, marks: Marks) -> bool:
    if p.session is not None:
        return p.session == marks.session
    return _points_into(p, marks.paths)


def _kept(procs: dict[int, Proc], p: Proc, kept_groups: frozenset[int]) -> bool:
    """In a kept stack's process group, or a descendant of one (a dockerd's containerd)."""
    seen: set[int] = set()
    cur: Proc | None = p
    while cur is not None and cur.pid not in seen:
        if cur.pgid in kept_groups or cur.pid in kept_groups:
            return True
        seen.add(cur.pid)
        cur = procs.get(cur.ppid)
    return False


def leftovers(before: Snapshot, after: Snapshot, marks: Marks) -> list[Leftover]:
    """What ``after`` has of this session that ``before`` did not: the check's whole judgement."""
    old = {p.key for p in before.procs}
    by_pid = {p.pid: p for p in after.procs}
    found: list[Leftover] = []
    for p in after.procs:
        if p.key in old or p.pid == marks.own_pid or not _is_ours(p, marks):
            continue
        if marks.kept_groups and _kept(by_pid, p, marks.kept_groups):
            continue
        found.append(Leftover("process", p.text(), proc=p))

    # Engines alive now that are not this session's own own what sits under their roots.
    foreign = [p for p in after.procs if Path(p.argv[0]).name == "dockerd" if p.argv and not _is_ours(p, marks)]
    foreign_roots = [r for p in foreign for r in _dockerd_roots(p.argv)]
    foreign_bridges = {b for p in foreign for b in after.bridges.get(dockerd_host(p.argv), frozenset())}

    for m in sorted(after.mounts - before.mounts):
        if _under(m, marks.mount_roots) and not _within(m, foreign_roots):
            found.append(Leftover("mount", m))

    for f in sorted(after.folders - before.folders):
        if not _within(f, foreign_roots):
            found.append(Leftover("folder", f))

    old_links = {link.name for link in before.links}
    for link in after.links:
        if link.name in old_links or not link.name.startswith(LINK_PREFIXES):
            continue
        if (link.master or link.name) in foreign_bridges:
            continue
        found.append(Leftover("interface", link.name + (f" (on {link.master})" if link.master else "")))

    # A lab container on an engine that is not this session's (the system one, DOCKER_HOST) is
    # ours when its compose files lie in this session's folders, else a developer's.
    old_containers = {(c.host, c.id) for c in before.containers}
    foreign_hosts = {dockerd_host(p.argv) for p in foreign}
    for c in after.containers:
        if (c.host, c.id) in old_containers:
            continue
        if c.host in foreign_hosts and not any(m in c.files for m in marks.paths):
            continue
        found.append(Leftover("container", f"{c.name} ({c.id[:12]}) on {c.host}", container=c))
    return found


# ------------------------------------------------------------------ reading the machine
def _proc(entry: Path) -> Proc | None:
    try:
        raw = (entry / "stat").read_text()
        fields = raw[raw.rindex(")") + 2 :].split()
        if fields[0] in ("Z", "X"):
            return None  # a zombie holds nothing; its parent reaps it
        argv = tuple(a.decode(errors="replace") for a in (entry / "cmdline").read_bytes().split(b"\0") if a)
    except (OSError, ValueError, IndexError):
        return None  # gone meanwhile
    if not argv:
        return None  # a kernel thread
    try:
        cwd = os.readlink(entry / "cwd")
    except OSError:
        cwd = ""
    session: str | None = None
    try:
        for var in (entry / "environ").read_bytes().split(b"\0"):
            if var.startswith(SESSION_VAR.encode() + b"="):
                session = var.split(b"=", 1)[1].decode(errors="replace")
    except OSError:
        pass
    return Proc(int(entry.name), int(fields[19]), int(fields[1]), int(fields[2]), argv, cwd, session)


def _procs() -> tuple[Proc, ...]:
    out = (_proc(e) for e in Path("/proc").iterdir() if e.name.isdigit())
    return tuple(p for p in out if p is not None)


def _mounts() -> frozenset[str]:
    points = (line.split()[1] for line in Path("/proc/mounts").read_text().splitlines() if line.strip())
    # /proc/mounts escapes spaces and the like in octal (\040).
    return frozenset(p.encode().decode("unicode_escape") if "\\" in p else p for p in points)


def _links() -> tuple[Link, ...]:
    try:
        res = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ()
    out = []
    for line in res.stdout.splitlines():
        parts = line.split(": ", 2)
        if len(parts) < 3:
            continue
        words = parts[2].split()
        master = words[words.index("master") + 1] if "master" in words[:-1] else None
        out.append(Link(parts[1].split("@")[0], master))
    return tuple(out)


def _docker(host: str, *args: str) -> str | None:
    from lab.stack.engine import DOCKER

    try:
        res = subprocess.run(
            [DOCKER, *args], capture_output=True, text=True, timeout=15, env={**os.environ, "DOCKER_HOST": host}
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return res.stdout if res.returncode == 0 else None


def _engine_hosts(procs: tuple[Proc, ...]) -> list[str]:
    hosts = {dockerd_host(p.argv) for p in procs if p.argv and Path(p.argv[0]).name == "dockerd"}
    if os.environ.get("DOCKER_HOST"):
        hosts.add(os.environ["DOCKER_HOST"])
    return sorted(h for h in hosts if not h.startswith("unix://") or Path(h.removeprefix("unix://")).exists())


def take(with_engines: bool = True) -> Snapshot:
    """The machine now. ``with_engines``: also ask each live Docker engine for its running lab
    containers (compose projects named chaoslab*) and its networks' bridges."""
    procs = _procs()
    containers: list[Container] = []
    bridges: dict[str, frozenset[str]] = {}
    for host in _engine_hosts(procs) if with_engines else []:
        ps = _docker(host, "ps", "-q", "--no-trunc", "--filter", "label=com.docker.compose.project")
        for cid in (ps or "").split():
            fmt = "{{.Name}}\t{{json .Config.Labels}}"
            name, _, labels_json = (_docker(host, "inspect", "-f", fmt, cid) or "").strip().partition("\t")
            try:
                labels = json.loads(labels_json) or {}
            except ValueError:
                continue  # gone meanwhile
            if str(labels.get("com.docker.compose.project", "")).startswith("chaoslab"):
                files = " ".join(str(v) for k, v in labels.items() if k.startswith("com.docker.compose.project"))
                containers.append(Container(host, cid, name.lstrip("/"), files))
        nets = _docker(host, "network", "ls", "-q", "--no-trunc", "--filter", "driver=bridge")
        bridges[host] = frozenset("br-" + n[:12] for n in (nets or "").split())
    folders = frozenset(str(d) for d in Path("/run").glob("chaoslab-*"))
    return Snapshot(procs, _mounts(), _links(), tuple(containers), folders, bridges)


def temp_left(folder: Path, skip: Iterable[str] = ()) -> list[Leftover]:
    """What is in the session's temporary folder (``skip``: pytest's own tmp folders, kept for
    the developer to read)."""
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return []
    return [Leftover("temp file", str(e)) for e in entries if not _under(str(e), skip)]


# ------------------------------------------------------------------ after the report: clean up
def clean(found: list[Leftover], marks: Marks) -> list[str]:
    """Remove what was reported so the next run starts clean: containers (on their engine),
    processes (SIGTERM, then SIGKILL; a dockerd first stops its containerd itself), then mounts
    (deepest first), exec root folders and interfaces. Only what ``leftovers`` attributed to
    this session."""
    from lab.common.errors import NotReady
    from lab.common.wait import wait_until
    from lab.stack import procs as lab_procs

    done: list[str] = []
    for lo in found:
        if lo.container is not None:
            ok = _docker(lo.container.host, "rm", "-f", lo.container.id) is not None
            done.append(f"container {lo.container.name}: {'removed' if ok else 'could not be removed'}")
    ps = [lo.proc for lo in found if lo.proc is not None]
    ps.sort(key=lambda p: Path(p.argv[0]).name != "dockerd")  # dockerd first: it stops its own

    def alive(p: Proc) -> bool:
        return lab_procs._start_ticks(p.pid) == p.start_ticks

    for p in ps:
        if alive(p):
            try:
                os.kill(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    try:
        wait_until(lambda: not any(alive(p) for p in ps), what="leftover processes exit", timeout_s=20, interval_s=0.1)
    except NotReady:
        pass
    for p in ps:
        if alive(p):
            try:
                os.kill(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            done.append(f"pid {p.pid}: killed (SIGKILL)")
        else:
            done.append(f"pid {p.pid}: stopped")
    for m in sorted((lo.what for lo in found if lo.kind == "mount"), key=len, reverse=True):
        if m not in _mounts():
            done.append(f"mount {m}: gone with its engine")
            continue
        res = subprocess.run(["umount", "-l", m], capture_output=True, text=True, timeout=30)
        done.append(f"mount {m}: {'unmounted' if res.returncode == 0 else res.stderr.strip()}")
    for lo in found:
        if lo.kind == "folder":
            import shutil

            shutil.rmtree(lo.what, ignore_errors=True)
            done.append(f"folder {lo.what}: {'could not be removed' if Path(lo.what).exists() else 'removed'}")
    for lo in found:
        if lo.kind == "temp file":
            import shutil

            path = Path(lo.what)
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
            done.append(f"{lo.what}: {'could not be removed' if path.exists() else 'removed'}")
    for lo in found:
        if lo.kind == "interface":
            name = lo.what.split()[0]
            res = subprocess.run(["ip", "link", "delete", name], capture_output=True, text=True, timeout=30)
            done.append(f"interface {name}: {'deleted' if res.returncode == 0 else res.stderr.strip() or 'gone'}")
    return done


def kept_groups(run_dirs: Iterable[Path]) -> frozenset[int]:
    """The process groups of the stacks recorded in ``run_dirs`` (each service leads its own)."""
    groups = set()
    for d in run_dirs:
        for f in d.glob("*.pid") if d.is_dir() else []:
            try:
                groups.add(int(json.loads(f.read_text())["pid"]))
            except (OSError, ValueError, KeyError, TypeError):
                pass
    return frozenset(groups)
