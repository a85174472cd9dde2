"""scripts/under_load.sh (`make test-loaded`): the command's exit status passes through, bad
settings exit 2 naming the fix, and the load -- LOAD=ci's build, disk writer and memory holder
too -- is gone with its files when the command ends."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lab.common.config import ROOT
from lab.common.wait import wait_until

SCRIPT = ROOT / "scripts" / "under_load.sh"


def run(tmp_path: Path, *cmd: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT), *cmd],
        env={**os.environ, "LOAD_DIR": str(tmp_path), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def ours(tmp_path: Path) -> list[str]:
    """Live processes whose command line names the load's folder (load.sh, dd)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            args = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(tmp_path) in args and "pytest" not in args:
            found.append(f"{entry.name}: {args[:120]}")
    return found


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"LOAD": "heavy"}, "give LOAD=cpu (busy loops) or LOAD=ci"),
        ({"HOG_CPUS": "two"}, "HOG_CPUS=two: give a whole number"),
        ({"LOAD": "ci", "MEM_MB": str(10**9)}, "is more than half of this machine's"),
    ],
)
def test_bad_settings_exit_2_naming_the_fix(tmp_path: Path, env: dict[str, str], says: str) -> None:
    res = run(tmp_path, "true", **env)
    assert res.returncode == 2 and says in res.stderr, res.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_commands_exit_status_and_nothing_left(tmp_path: Path) -> None:
    res = run(tmp_path, "bash", "-c", "exit 3", LOAD="cpu", HOG_CPUS="1")
    assert res.returncode == 3, res.stdout + res.stderr
    assert "[load] LOAD=cpu: 1 busy loops" in res.stdout and "[load] done (exit 3); load average" in res.stdout
    assert list(tmp_path.iterdir()) == [] and ours(tmp_path) == []


def test_ci_load_writes_to_disk_and_leaves_nothing(tmp_path: Path) -> None:
    """The command waits until the disk writer runs in the load's folder, then ends."""
    probe = (
        "import sys; from pathlib import Path; from lab.common.wait import wait_until\n"
        "def dd():\n"
        "    for e in Path('/proc').iterdir():\n"
        "        try: a = (e / 'cmdline').read_bytes()\n"
        "        except OSError: continue\n"
        "        if a.startswith(b'dd\\0') and sys.argv[1].encode() in a: return True\n"
        "wait_until(dd, what='the disk writer', timeout_s=60)\n"
    )
    res = run(tmp_path, sys.executable, "-c", probe, str(tmp_path), LOAD="ci", HOG_CPUS="0", MEM_MB="16", DISK_MB="8")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "8 MB (direct I/O, fsync) in a loop, 16 MB held and touched" in res.stdout, res.stdout
    # Stopped before the script returned; bounded wait only for the kernel to reap.
    wait_until(lambda: ours(tmp_path) == [], what="the load gone", timeout_s=10)
    assert list(tmp_path.iterdir()) == []
