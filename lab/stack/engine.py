"""A Docker engine for compose mode: the one DOCKER_HOST names, else the system one, else (as
root) a private dockerd the lab starts itself -- overlay2 storage where the data root's file
system can mount overlayfs, else vfs; its own data root, exec root and socket, no iptables --
and stops again. DOCKER_HOST is set only for the lab's child processes."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from lab.common.errors import LabError, NotReady
from lab.stack import procs
from lab.common.wait import wait_until

DOCKER = "/usr/bin/docker" if Path("/usr/bin/docker").exists() else (shutil.which("docker") or "docker")
# The engine's own processes: what a killed run can leave holding our exec root and socket.
ENGINE_PROGRAMS = frozenset({"dockerd", "containerd", "containerd-shim", "containerd-shim-runc-v2", "docker-proxy"})


def cmdlines() -> list[tuple[int, list[str]]]:
    """(pid, argv) of every live process we can read (zombies have an empty cmdline)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "cmdline").read_bytes()
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if raw:
            out.append((int(entry.name), [a.decode(errors="replace") for a in raw.split(b"\0") if a]))
    return out


def reachable(host: str) -> bool:
    try:
        res = subprocess.run(
            [DOCKER, "version", "--format", "{{.Server.Version}}"],
            timeout=10,
            capture_output=True,
            text=True,
            env={**os.environ, "DOCKER_HOST": host},
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return res.returncode == 0 and bool(res.stdout.strip())


def storage_driver(data_root: Path) -> str:
    """overlay2 if an overlayfs mounts on the data root's file system, else vfs. vfs copies an
    image's whole file system for every container and build step (measured here, a 388 MB
    image: creating a container took 2.4 s on vfs, 0.03 s on overlay2); overlay2 cannot sit on
    an overlayfs itself (a data root inside a container's root file system), where vfs can."""
    try:
        probe = Path(tempfile.mkdtemp(prefix=".overlay-probe-", dir=data_root))
    except OSError:
        return "vfs"
    try:
        for d in ("lower", "upper", "work", "merged"):
            (probe / d).mkdir()
        opts = f"lowerdir={probe / 'lower'},upperdir={probe / 'upper'},workdir={probe / 'work'}"
        res = subprocess.run(
            ["mount", "-t", "overlay", "overlay", "-o", opts, str(probe / "merged")], capture_output=True, timeout=30
        )
        if res.returncode != 0:
            return "vfs"
        subprocess.run(["umount", str(probe / "merged")], capture_output=True, timeout=30)
        return "overlay2"
    except (OSError, subprocess.TimeoutExpired):
        return "vfs"
    finally:
        shutil.rmtree(probe, ignore_errors=True)


class Engine:
    def __init__(self, run_dir: Path, data_root: Path) -> None:
        self.run_dir, self.data_root = run_dir, data_root
        # Unix socket paths are short (108 bytes): keep the private engine's under /run.
        tag = hashlib.sha1(str(run_dir).encode()).hexdigest()[:8]
        self.exec_root = Path(f"/run/chaoslab-{tag}")
        self.private_host = f"unix://{self.exec_root}/docker.sock"

    def find(self) -> str | None:
        """The engine to use if one is reachable: DOCKER_HOST, our private one, the system one."""
        for host in filter(None, (os.environ.get("DOCKER_HOST"), self.private_host, "unix:///var/run/docker.sock")):
            if host == self.private_host and procs.read(self.run_dir, "dockerd") is None:
                continue
            if reachable(host):
                return host
        return None

    def ensure(self, timeout_s: float = 60.0) -> str:
        """A reachable DOCKER_HOST, starting the private engine if need be."""
        found = self.find()
        if found is not None:
            return found
        dockerd = shutil.which("dockerd") or "/usr/sbin/dockerd"
        if os.geteuid() != 0:
            raise LabError(
                "no Docker engine is reachable and starting one needs root",
                "start Docker (or set DOCKER_HOST), or use native mode: lab up",
            )
        if not Path(dockerd).exists():
            raise LabError(
                "no Docker engine is reachable and dockerd is not installed",
                "run `make setup` as root (installs docker.io), or use native mode",
            )
        self.stop_stale()  # its socket and exec root are the ones we are about to use
        self.run_dir.mkdir(parents=True, exist_ok=True)  # its log and pidfile go there
        self.exec_root.mkdir(parents=True, exist_ok=True)
        self.data_root.mkdir(parents=True, exist_ok=True)
        info = procs.spawn(
            "dockerd",
            [
                # --bridge=none: compose uses its own networks; the default docker0 bridge would be
                # left behind on this host when the engine stops.
                dockerd,
                f"--storage-driver={storage_driver(self.data_root)}",
                "--iptables=false",
                "--bridge=none",
                "--data-root",
                str(self.data_root),
                "--exec-root",
                str(self.exec_root / "exec"),
                "--pidfile",
                str(self.exec_root / "docker.pid"),
                "-H",
                self.private_host,
            ],
            self.run_dir,
        )
        wait_until(
            lambda: reachable(self.private_host),
            what=f"private dockerd (pid {info.pid})",
            timeout_s=timeout_s,
            interval_s=0.2,
            abort=lambda: None if info.alive() else "dockerd exited; see dockerd.log",
        )
        # Networks an earlier engine on this data root could not remove (it was killed) would
        # come back as bridges on the host: drop every unused one now.
        subprocess.run(
            [DOCKER, "network", "prune", "-f"],
            capture_output=True,
            timeout=60,
            env={**os.environ, "DOCKER_HOST": self.private_host},
        )
        return self.private_host

    def stale(self) -> list[tuple[int, list[str]]]:
        """Engine processes an earlier run left behind: a dockerd/containerd whose command line
        names our exec root or socket, while our pidfile is gone or names another, dead
        process (a `lab` killed with SIGKILL, a reboot of the lab's folder...). Starting a new
        engine on the same exec root and socket would fail, or fight the old one."""
        ours = procs.read(self.run_dir, "dockerd")
        live_owner = ours.pid if ours is not None and ours.alive() else None
        marks = (str(self.exec_root), self.private_host.removeprefix("unix://"))
        found = []
        for pid, argv in cmdlines():
            if pid == live_owner or pid == os.getpid():
                continue
            if Path(argv[0]).name in ENGINE_PROGRAMS and any(m in a for a in argv for m in marks):
                found.append((pid, argv))
        return found

    def stop_stale(self, timeout_s: float = 20.0) -> list[str]:
        """Stop what ``stale`` finds (SIGTERM, SIGKILL after ``timeout_s``), saying so on stderr,
        and unmount what it left under our roots."""
        report = []
        for pid, argv in self.stale():
            print(
                f"lab: a Docker engine left by an earlier run holds {self.exec_root}: "
                f"pid {pid} ({' '.join(argv)[:200]}); stopping it",
                file=sys.stderr,
                flush=True,
            )
            report.append(_terminate(pid, timeout_s))
        if report:
            procs.pidfile(self.run_dir, "dockerd").unlink(missing_ok=True)
            self._unmount()
        return report

    def stop(self) -> str | None:
        info = procs.read(self.run_dir, "dockerd")
        report = []
        if info is not None:
            report.append(f"dockerd (pid {info.pid}): {procs.stop(info, self.run_dir, timeout_s=20)}")
            self._unmount()
        # Also an engine a killed run left unrecorded (or recorded under a pid now dead).
        report += self.stop_stale()
        return "; ".join(report) or None

    def _unmount(self) -> None:
        # A dockerd stopped while still starting can leave its data root bind-mounted onto
        # itself, and netns mounts under its exec root: unmount what is ours, deepest first.
        ours = (str(self.data_root), str(self.exec_root))
        mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
        for m in sorted((m for m in mounts if m.startswith(ours)), key=len, reverse=True):
            subprocess.run(["umount", "-l", m], capture_output=True, timeout=30)
        shutil.rmtree(self.exec_root, ignore_errors=True)


def _terminate(pid: int, timeout_s: float) -> str:
    """SIGTERM ``pid`` (dockerd stops its containerd itself), SIGKILL if it outlives the
    deadline; "stopped" / "killed" / "already gone"."""

    def gone() -> bool:
        return procs.state(pid) in (None, "Z", "X")

    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return f"pid {pid}: already gone"
    try:
        wait_until(gone, what=f"pid {pid} exit", timeout_s=timeout_s, interval_s=0.05)
        return f"pid {pid}: stopped"
    except NotReady:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        wait_until(gone, what=f"pid {pid} exit after SIGKILL", timeout_s=5.0, interval_s=0.05)
        return f"pid {pid}: killed"
