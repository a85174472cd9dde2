"""Helpers for tests that start stacks of their own: free ports, an isolated environment, and
the `lab` command run as a user runs it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from lab.config import PORT_ENV, ROOT


def free_ports(n: int) -> list[int]:
    """n distinct ports the kernel says are free now (held together, so never the same twice)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def isolated_env(run_dir: Path, **extra: str) -> dict[str, str]:
    """This process's environment with every lab port free and its own run folder."""
    env = dict(os.environ)
    env.update({name: str(p) for name, p in zip(PORT_ENV.values(), free_ports(len(PORT_ENV)))})
    env["LAB_RUN_DIR"] = str(run_dir)
    env.update(extra)
    return env


def run_lab(env: dict[str, str], *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lab", *args], env=env, capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)
