"""What each of the node's programs is started with (pure: paths and text, no process).

Everything listens on 127.0.0.1 only. The API server trusts one bearer token (written at start,
never printed) and authorizes everything it authenticates: the cluster lives for one run on one
machine and nothing outside reaches it. The pods' network is one bridge with no gateway, no
masquerade and no port mapping -- a pod talks only to its own loopback, which is all a shard
needs -- so neither CNI nor the kubelet adds an iptables rule. Pods run in their own cgroup
root (CGROUP_ROOT) and the kubelet's and containerd's files stay in the run's folders, so what
a run leaves is findable (lab.k8s.cleanup).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

PORTS = {"etcd": 23790, "etcd-peer": 23800, "apiserver": 16443, "controller-manager": 10257, "scheduler": 10259,
         "kubelet": 10250, "kubelet-healthz": 10248}  # fmt: skip
NODE = "chaoslab-node"
BRIDGE = "chaoslab0"
POD_CIDR = "10.244.0.0/24"
SERVICE_CIDR = "10.96.0.0/24"
CGROUP_ROOT = "/chaoslab-k8s"
# CAP_SYS_RESOURCE is missing in some sandboxes (this machine's): a negative oom_score_adj (the
# kubelet asks -998 for pod sandboxes) then fails runc's start with "can't get final child's PID
# from pipe"; containerd clamps it to its own instead.


@dataclass(frozen=True)
class Layout:
    """The run's folders: ``state`` holds everything on disk, ``run`` the sockets (a Unix
    socket path has 108 bytes at most)."""

    state: Path

    @property
    def run(self) -> Path:
        return Path("/run") / f"chaoslab-k8s-{hashlib.sha1(str(self.state).encode()).hexdigest()[:8]}"

    @property
    def containerd_sock(self) -> Path:
        return self.run / "containerd.sock"

    @property
    def pki(self) -> Path:
        return self.state / "pki"

    @property
    def kubeconfig(self) -> Path:
        return self.state / "kubeconfig"

    @property
    def results(self) -> Path:
        return self.state / "results"

    @property
    def pod_logs(self) -> Path:
        return self.state / "pod-logs"


def kubeconfig(token: str) -> str:
    return json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "chaoslab",
        "clusters": [{"name": "chaoslab", "cluster": {"server": f"https://127.0.0.1:{PORTS['apiserver']}",
                                                      "insecure-skip-tls-verify": True}}],
        "users": [{"name": "chaoslab", "user": {"token": token}}],
        "contexts": [{"name": "chaoslab", "context": {"cluster": "chaoslab", "user": "chaoslab"}}],
    }, indent=1)  # fmt: skip


def containerd_toml(lay: Layout, sandbox_image: str) -> str:
    return f"""version = 2
root = "{lay.state / "containerd"}"
state = "{lay.run / "containerd"}"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
                    "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "{lay.containerd_sock}"
[plugins."io.containerd.internal.v1.opt"]
  path = "{lay.state / "containerd-opt"}"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{sandbox_image}"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{lay.state / "cni"}"
"""


def cni_conflist(lay: Layout) -> str:
    return json.dumps({"cniVersion": "0.4.0", "name": "chaoslab", "plugins": [
        {"type": "bridge", "bridge": BRIDGE, "isGateway": False, "ipMasq": False, "hairpinMode": False,
         "ipam": {"type": "host-local", "ranges": [[{"subnet": POD_CIDR}]], "dataDir": str(lay.state / "ipam")}},
        {"type": "loopback"},
    ]}, indent=1)  # fmt: skip


def kubelet_config(lay: Layout) -> str:
    """KubeletConfiguration (JSON is YAML): cgroupfs on this machine's cgroup v1, no swap check,
    no iptables chains, no eviction on a full disk of a build machine."""
    return json.dumps({
        "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
        "address": "127.0.0.1", "port": PORTS["kubelet"], "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1", "healthzPort": PORTS["kubelet-healthz"],
        "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
        "authorization": {"mode": "AlwaysAllow"},
        "cgroupDriver": "cgroupfs", "cgroupRoot": CGROUP_ROOT, "failSwapOn": False, "failCgroupV1": False,
        "makeIPTablesUtilChains": False, "containerRuntimeEndpoint": f"unix://{lay.containerd_sock}",
        "podLogsDir": str(lay.pod_logs), "serializeImagePulls": False,
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%",
                         "nodefs.inodesFree": "1%"},
        "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
    }, indent=1)  # fmt: skip


def argv(name: str, lay: Layout, bins: Path) -> list[str]:
    """The command line of one of the node's programs."""
    p, s = PORTS, lay.state
    common = [f"--kubeconfig={lay.kubeconfig}", "--bind-address=127.0.0.1", "--leader-elect=false"]
    if name == "etcd":
        return ["etcd", f"--data-dir={s / 'etcd'}", f"--listen-client-urls=http://127.0.0.1:{p['etcd']}",
                f"--advertise-client-urls=http://127.0.0.1:{p['etcd']}",
                f"--listen-peer-urls=http://127.0.0.1:{p['etcd-peer']}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{p['etcd-peer']}",
                f"--initial-cluster=default=http://127.0.0.1:{p['etcd-peer']}"]  # fmt: skip
    if name == "apiserver":
        return [str(bins / "kube-apiserver"), f"--etcd-servers=http://127.0.0.1:{p['etcd']}",
                "--bind-address=127.0.0.1", f"--secure-port={p['apiserver']}", f"--cert-dir={lay.pki}",
                "--service-account-issuer=https://kubernetes.default.svc",
                f"--service-account-key-file={lay.pki / 'sa.pub'}",
                f"--service-account-signing-key-file={lay.pki / 'sa.key'}",
                f"--service-cluster-ip-range={SERVICE_CIDR}", "--authorization-mode=AlwaysAllow",
                f"--token-auth-file={lay.pki / 'tokens.csv'}"]  # fmt: skip
    if name == "controller-manager":
        # No cloud, no node IPAM (the bridge's host-local range is the pods' addresses).
        return [str(bins / "kube-controller-manager"), *common, f"--secure-port={p['controller-manager']}",
                f"--service-account-private-key-file={lay.pki / 'sa.key'}",
                "--controllers=*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-node-route-controller"]  # fmt: skip
    if name == "scheduler":
        return [str(bins / "kube-scheduler"), *common, f"--secure-port={p['scheduler']}"]
    if name == "containerd":
        return ["containerd", f"--config={s / 'containerd.toml'}"]
    if name == "kubelet":
        # --node-ip is left out: a loopback address is refused, and nothing reaches the kubelet
        # through the node's address (the lab reads pod logs from podLogsDir, stats on 127.0.0.1).
        return [str(bins / "kubelet"), f"--config={s / 'kubelet.json'}", f"--kubeconfig={lay.kubeconfig}",
                f"--root-dir={s / 'kubelet'}", f"--cert-dir={s / 'kubelet-pki'}", f"--hostname-override={NODE}"]  # fmt: skip
    raise ValueError(f"not one of the node's programs: {name}")


PROGRAMS = ("etcd", "apiserver", "controller-manager", "scheduler", "containerd", "kubelet")
