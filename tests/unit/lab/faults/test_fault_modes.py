"""A fault that needs Docker on the native stack (or the reverse): exit 2 before anything
starts, with a message naming what to use instead."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from lab.common.config import ROOT
from lab.common.errors import UsageError
from lab.faults import REGISTRY, Fault, check_mode


def lab(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "LAB_RUN_DIR": str(tmp / "run"), "HOME": str(tmp)}
    return subprocess.run(
        [sys.executable, "-m", "lab", *args], capture_output=True, text=True, timeout=60, cwd=ROOT, env=env
    )


@pytest.mark.parametrize(
    "args",
    [
        ("chaos", "--mode", "native", "--only", "profile=correct;fault=redis_net_disconnect"),
        ("replay", "--profile", "correct", "--fault", "redis_net_disconnect", "--refresh", "settled", "--seed", "1"),
    ],
    ids=["chaos", "replay"],
)
def test_a_docker_only_fault_on_native_names_the_alternatives(args: tuple[str, ...], tmp_path: Path) -> None:
    res = lab(*args, tmp=tmp_path)
    assert res.returncode == 2, res.stderr
    assert "fault 'redis_net_disconnect' needs Docker (compose mode)" in res.stderr
    assert "--mode compose" in res.stderr and "use blackhole" in res.stderr
    assert "Traceback" not in res.stderr
    assert not (tmp_path / "run").exists(), "nothing may start on bad input"


def test_a_native_only_fault_on_compose_names_native_mode() -> None:
    @dataclass
    class OnlyNative(Fault):  # not registered: the rule, not a real fault
        name = "only_native"
        modes = ("native",)
        instead = "redis_pause"

    with pytest.raises(UsageError) as err:
        check_mode(OnlyNative, "compose")
    assert "needs the native stack; the compose stack cannot do it" in str(err.value)
    assert "--mode native" in str(err.value) and "use redis_pause" in str(err.value)
    check_mode(OnlyNative, "native")


@pytest.mark.parametrize("name", ["redis_pause", "redis_restart", "backend_restart", "latency", "down"])
def test_process_and_toxiproxy_faults_run_in_both_modes(name: str) -> None:
    for mode in ("native", "compose"):
        check_mode(REGISTRY[name], mode)


@pytest.mark.parametrize("name", ["latency", "down", "drop", "ttl_elapse", "none"])
def test_toxiproxy_and_lab_mode_faults_run_in_the_external_mode(name: str) -> None:
    check_mode(REGISTRY[name], "external")


@pytest.mark.parametrize("name", ["redis_pause", "redis_restart", "backend_restart"])
def test_process_faults_are_refused_in_the_external_mode(name: str) -> None:
    """The external mode (a pod's containers) owns no process to pause or restart."""
    with pytest.raises(UsageError, match="the external stack cannot do it"):
        check_mode(REGISTRY[name], "external")
