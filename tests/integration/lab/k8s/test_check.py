"""`lab k8s check` against a real API server, etcd and the Job controller (no kubelet): deploy/k8s
as it is gives the pods a run needs, a copy that pulls an image Always is refused with that named,
and neither leaves a process, mount or file of the cluster behind.

Needs root, Debian's etcd and the Kubernetes programs built once (`lab k8s build`, about 6 min:
not done by the suite, which skips saying so)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lab.common.config import ROOT, cache_dir
from lab.k8s import binaries, cleanup
from lab.k8s.configs import Layout

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="lab k8s starts etcd and the control plane as root"),
    pytest.mark.skipif(shutil.which("etcd") is None, reason="no etcd: apt-get install etcd-server (lab setup k8s)"),
    pytest.mark.skipif(
        not binaries.built(cache_dir()), reason="Kubernetes not built here: lab k8s build (about 6 min)"
    ),
]


def _check(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LAB_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "lab", "k8s", "check", *args], env=env, capture_output=True, text=True,
                          timeout=300)  # fmt: skip


def test_deploy_k8s_gives_the_pods_a_run_needs_and_nothing_is_left(tmp_path: Path) -> None:
    res = _check(tmp_path, "--shards", "3")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "job.batch/chaoslab-shards created (server dry run)" in res.stdout
    assert "3 pods, indexes 0..2: as the run needs" in res.stdout
    assert "nothing left behind" in res.stdout
    assert not (tmp_path / "k8s").exists() and cleanup.leftovers(Layout(tmp_path / "k8s")) == []


def test_a_manifest_that_pulls_always_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "k8s-manifests"
    shutil.copytree(ROOT / "deploy" / "k8s", folder)
    shards = folder / "chaos-shards.yaml"
    text = shards.read_text()
    assert text.count("imagePullPolicy: IfNotPresent") == 4
    shards.write_text(text.replace("imagePullPolicy: IfNotPresent", "imagePullPolicy: Always", 1))
    res = _check(tmp_path, "--shards", "2", "--manifests", str(folder))
    assert res.returncode == 1, res.stdout + res.stderr
    problems = [line for line in res.stdout.splitlines() if "PROBLEM" in line]
    assert len(problems) == 2 and all("/redis: imagePullPolicy Always" in p for p in problems), res.stdout
    assert "nothing left behind" in res.stdout


def test_ctrl_c_while_the_control_plane_runs_leaves_nothing(tmp_path: Path) -> None:
    """SIGINT to the command's process group, as a terminal's Ctrl-C sends it, once the API
    server and the controller manager run: exit 130, and the cluster removed."""
    import signal

    from lab.common.wait import wait_until

    env = {**os.environ, "LAB_HOME": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "lab", "k8s", "check"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    state = tmp_path / "k8s"
    try:
        wait_until(lambda: (state / "controller-manager.pid").exists() or proc.poll() is not None,
                   what="the control plane started", timeout_s=120, interval_s=0.2)  # fmt: skip
        assert proc.poll() is None, proc.communicate()[0]
        os.killpg(proc.pid, signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, out
    assert "interrupted by SIGINT" in out and "nothing left behind" in out
    assert cleanup.leftovers(Layout(state)) == [] and not state.exists()
