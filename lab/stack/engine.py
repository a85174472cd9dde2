"""A Docker engine for compose mode: the one DOCKER_HOST names, else the system one, else (as
root) a private dockerd the lab starts itself -- vfs storage, its own data root, exec root and
socket, no iptables -- and stops again. DOCKER_HOST is set only for the lab's child processes."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from lab.errors import LabError
from lab.stack import procs
from lab.wait import wait_until

DOCKER = "/usr/bin/docker" if Path("/usr/bin/docker").exists() else (shutil.which("docker") or "docker")


def reachable(host: str) -> bool:
    try:
        res = subprocess.run([DOCKER, "version", "--format", "{{.Server.Version}}"], timeout=10,
                             capture_output=True, text=True, env={**os.environ, "DOCKER_HOST": host})
    except (OSError, subprocess.TimeoutExpired):
        return False
    return res.returncode == 0 and bool(res.stdout.strip())


class Engine:
    def __init__(self, run_dir: Path, data_root: Path) -> None:
        self.run_dir, self.data_root = run_dir, data_root
        # Unix socket paths are short (108 bytes): keep the private engine's under /run.
        tag = hashlib.sha1(str(run_dir).encode()).hexdigest()[:8]
        self.exec_root = Path(f"/run/chaoslab-{tag}")
        self.private_host = f"unix://{self.exec_root}/docker.sock"

    def find(self) -> str | None:
        """The engine to use if one is reachable: DOCKER_HOST, our private one, the system one."""
        for host in filter(None, (os.environ.get("DOCKER_HOST"), self.private_host,
                                  "unix:///var/run/docker.sock")):
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
            raise LabError("no Docker engine is reachable and starting one needs root",
                           "start Docker (or set DOCKER_HOST), or use native mode: lab up")
        if not Path(dockerd).exists():
            raise LabError("no Docker engine is reachable and dockerd is not installed",
                           "run `make setup` as root (installs docker.io), or use native mode")
        self.exec_root.mkdir(parents=True, exist_ok=True)
        self.data_root.mkdir(parents=True, exist_ok=True)
        info = procs.spawn("dockerd", [
            # --bridge=none: compose uses its own networks; the default docker0 bridge would be
            # left behind on this host when the engine stops.
            dockerd, "--storage-driver=vfs", "--iptables=false", "--bridge=none",
            "--data-root", str(self.data_root), "--exec-root", str(self.exec_root / "exec"),
            "--pidfile", str(self.exec_root / "docker.pid"), "-H", self.private_host,
        ], self.run_dir)
        wait_until(lambda: reachable(self.private_host), what=f"private dockerd (pid {info.pid})",
                   timeout_s=timeout_s, interval_s=0.2,
                   abort=lambda: None if info.alive() else "dockerd exited; see dockerd.log")
        # Networks an earlier engine on this data root could not remove (it was killed) would
        # come back as bridges on the host: drop every unused one now.
        subprocess.run([DOCKER, "network", "prune", "-f"], capture_output=True, timeout=60,
                       env={**os.environ, "DOCKER_HOST": self.private_host})
        return self.private_host

    def started_here(self) -> bool:
        info = procs.read(self.run_dir, "dockerd")
        return info is not None and info.alive()

    def stop(self) -> str | None:
        info = procs.read(self.run_dir, "dockerd")
        if info is None:
            return None
        outcome = procs.stop(info, self.run_dir, timeout_s=20)
        # A dockerd stopped while still starting can leave its data root bind-mounted onto
        # itself, and netns mounts under its exec root: unmount what is ours, deepest first.
        ours = (str(self.data_root), str(self.exec_root))
        mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
        for m in sorted((m for m in mounts if m.startswith(ours)), key=len, reverse=True):
            subprocess.run(["umount", "-l", m], capture_output=True, timeout=30)
        shutil.rmtree(self.exec_root, ignore_errors=True)
        return f"dockerd (pid {info.pid}): {outcome}"
