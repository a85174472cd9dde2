"""A single-node cluster for one run: etcd, the control plane, containerd and the kubelet as the
lab's own processes (lab.stack.procs: pidfiles, the run mark, stopped by process group), their
files in one state folder, and `down` that leaves the machine as it found it (lab.k8s.cleanup).

Measured here (2 cores, 2026-12-04, quiet): API server ready 2 s after etcd, the node Ready
about 15 s after the kubelet starts; loading the lab's images into containerd about 45 s.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lab.common.errors import LabError, NotReady, UsageError
from lab.common.files import write_atomic
from lab.common.wait import wait_until
from lab.k8s import cleanup, configs
from lab.k8s.configs import PORTS, Layout
from lab.k8s.images import PAUSE_IMAGE, containerd_name, pause_tarball
from lab.stack import ports, procs


def _private(path: Path, text: str) -> None:
    """A file only root reads (the cluster's one credential), written whole."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)


class Node:
    def __init__(self, state: Path, bins: Path, say: Callable[[str], None] = print) -> None:
        self.lay = Layout(state.resolve())
        self.bins, self.say = bins, say

    # ----------------------------------------------------------------- tools
    def kubectl(self, *args: str, timeout_s: float = 120, check: bool = True, stdin: str | None = None) -> str:
        res = subprocess.run(
            [str(self.bins / "kubectl"), f"--kubeconfig={self.lay.kubeconfig}", *args],
            capture_output=True, text=True, timeout=timeout_s, input=stdin,
        )  # fmt: skip
        if check and res.returncode != 0:
            raise LabError(f"kubectl {' '.join(args[:2])} failed: {res.stderr.strip()[-500:]}")
        return res.stdout

    def get(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json"))

    def ctr(self, *args: str, timeout_s: float = 600) -> str:
        """containerd's own client. Its dial gives up after 10 s, which a containerd busy just
        after unpacking 2 GB of images has exceeded here once (run of 2026-12-04 14:57): a
        refused dial is tried again, for up to 30 s."""
        argv = ["ctr", "-a", str(self.lay.containerd_sock), "-n", "k8s.io", *args]

        def answered() -> str | None:
            res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
            if res.returncode == 0:
                return res.stdout
            if "failed to dial" in res.stderr:
                raise ConnectionError(res.stderr.strip()[-500:])  # not yet: tried again
            raise LabError(f"ctr {' '.join(args[:2])} failed: {res.stderr.strip()[-500:]}")

        try:
            return wait_until(answered, what=f"ctr {' '.join(args[:2])}", timeout_s=30, interval_s=1,
                              transient=(ConnectionError,))  # fmt: skip
        except NotReady as exc:
            raise LabError(f"ctr {' '.join(args[:2])} failed: containerd did not answer ({exc})") from None

    # ----------------------------------------------------------------- up
    def control_plane(self) -> None:
        """etcd, the API server and the controller manager (the Job controller makes the pods)."""
        self._check_free()
        s = self.lay.state
        for d in (s, self.lay.run, self.lay.pki, s / "cni", self.lay.results, self.lay.pod_logs):
            d.mkdir(parents=True, exist_ok=True)
        cleanup.record_host(self.lay)
        self._write_configs()
        self._start("etcd", lambda: self._http_ok(f"http://127.0.0.1:{PORTS['etcd']}/health"))
        self._start("apiserver", lambda: self._kubectl_ok("get", "--raw", "/readyz"))
        self._start("controller-manager", None)

    def up(self, images: Path, aliases: dict[str, str]) -> None:
        """The whole node, with ``images`` (a docker-save tarball) loaded, each tagged as the
        name the manifests use (``aliases``: {manifest name: tag in the tarball})."""
        self.control_plane()
        s = self.lay.state
        self._start("scheduler", None)
        self._start("containerd", lambda: self.lay.containerd_sock.exists() and self._ctr_ok())
        self.say("loading the images into containerd (no registry)")
        self.ctr("images", "import", str(pause_tarball(s)))
        self.ctr("images", "import", str(images), timeout_s=1800)
        for name, tag in aliases.items():
            self.ctr("images", "tag", "--force", containerd_name(tag), containerd_name(name))
        cleanup.make_cgroup_root()
        self._start("kubelet", self._node_ready, timeout_s=120)
        self.say(f"node {configs.NODE} Ready (Kubernetes {self._server_version()})")

    def _check_free(self) -> None:
        for name, port in PORTS.items():
            if not ports.is_free("127.0.0.1", port):
                who = ports.holder(port) or "another process"
                raise UsageError(
                    f"port {port} ({name}) is taken by {who}",
                    "a cluster of an earlier run? `lab k8s down` removes it; else stop that process",
                )

    def _write_configs(self) -> None:
        s, pki = self.lay.state, self.lay.pki
        subprocess.run(["openssl", "genrsa", "-out", str(pki / "sa.key"), "2048"], check=True, capture_output=True)
        subprocess.run(["openssl", "rsa", "-in", str(pki / "sa.key"), "-pubout", "-out", str(pki / "sa.pub")],
                       check=True, capture_output=True)  # fmt: skip
        token = secrets.token_hex(24)
        _private(pki / "tokens.csv", f"{token},chaoslab,chaoslab,system:masters\n")
        _private(self.lay.kubeconfig, configs.kubeconfig(token))
        write_atomic(s / "containerd.toml", configs.containerd_toml(self.lay, PAUSE_IMAGE))
        write_atomic(s / "cni" / "10-chaoslab.conflist", configs.cni_conflist(self.lay))
        write_atomic(s / "kubelet.json", configs.kubelet_config(self.lay))

    def _start(self, name: str, ready: Callable[[], bool] | None, timeout_s: float = 60) -> None:
        info = procs.spawn(name, configs.argv(name, self.lay, self.bins), self.lay.state)
        if ready is None:
            return
        try:
            wait_until(lambda: ready() or not info.alive(), what=f"{name} ready", timeout_s=timeout_s, interval_s=0.25)
        except NotReady:
            pass
        if not info.alive() or not ready():
            tail = procs.log_tail(self.lay.state / f"{name}.log")
            raise LabError(f"{name} did not get ready:\n{tail}", "`lab k8s down` removes what started")

    def _http_ok(self, url: str) -> bool:
        import urllib.request

        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                return bool(r.status == 200)
        except OSError:
            return False

    def _kubectl_ok(self, *args: str) -> bool:
        try:
            self.kubectl(*args, timeout_s=10)
            return True
        except (LabError, OSError, subprocess.TimeoutExpired):
            return False

    def _ctr_ok(self) -> bool:
        try:
            self.ctr("version", timeout_s=10)
            return True
        except (LabError, OSError, subprocess.TimeoutExpired):
            return False

    def _node_ready(self) -> bool:
        try:
            node = self.get("node", configs.NODE)
        except (LabError, OSError, subprocess.TimeoutExpired, ValueError):
            return False
        return any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions", []))

    def _server_version(self) -> str:
        return str(json.loads(self.kubectl("version", "-o", "json")).get("serverVersion", {}).get("gitVersion", "?"))

    # ----------------------------------------------------------------- down
    def stop_workloads(self, timeout_s: float = 90) -> None:
        """Every Job and pod deleted through the API, while the kubelet still runs: it stops
        the containers and the pods' sandboxes (CNI releases their addresses)."""
        if not self._kubectl_ok("get", "--raw", "/readyz"):
            return
        # 5 s for the runner to stop (it writes its partial report), then the kubelet SIGKILLs.
        self.kubectl("delete", "jobs,pods", "--all", "--grace-period=5", "--wait=false", check=False)
        try:
            wait_until(lambda: not self.get("pods")["items"], what="pods deleted", timeout_s=timeout_s, interval_s=0.5)
        except (NotReady, LabError, OSError, subprocess.TimeoutExpired):
            self.kubectl("delete", "pods", "--all", "--force", "--grace-period=0", check=False)

    def down(self, keep_state: bool = False) -> tuple[list[str], list[str]]:
        """Stop and remove everything; (what was done, what is still left)."""
        if self.lay.state.exists():
            self.stop_workloads()
        done = cleanup.remove(self.lay)
        left = cleanup.leftovers(self.lay)
        if not keep_state:
            shutil.rmtree(self.lay.state, ignore_errors=True)
        return done, left
