"""The node's programs listen on loopback only, and keep their files in the run's folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.k8s import configs

LAY = configs.Layout(Path("/tmp/chaoslab-k8s-test"))


def test_every_program_binds_loopback_and_writes_under_the_state_folder() -> None:
    for name in configs.PROGRAMS:
        argv = configs.argv(name, LAY, Path("/bins"))
        joined = " ".join(argv)
        assert "0.0.0.0" not in joined
        for arg in argv[1:]:
            if "=/" in arg:
                path = arg.split("=", 1)[1]
                assert path.startswith((str(LAY.state), "/bins")) or path.endswith(".conf"), (name, arg)
    kubelet = json.loads(configs.kubelet_config(LAY))
    assert kubelet["address"] == kubelet["healthzBindAddress"] == "127.0.0.1"
    assert kubelet["readOnlyPort"] == 0 and kubelet["makeIPTablesUtilChains"] is False
    assert kubelet["cgroupRoot"] == configs.CGROUP_ROOT and kubelet["podLogsDir"] == str(LAY.pod_logs)
    with pytest.raises(ValueError):
        configs.argv("kube-proxy", LAY, Path("/bins"))


def test_the_pods_network_adds_no_rule_and_the_runtime_no_negative_oom_score() -> None:
    cni = json.loads(configs.cni_conflist(LAY))
    bridge = cni["plugins"][0]
    assert bridge["ipMasq"] is False and bridge["isGateway"] is False and bridge["bridge"] == configs.BRIDGE
    assert bridge["ipam"]["dataDir"].startswith(str(LAY.state))
    toml = configs.containerd_toml(LAY, "chaoslab.local/pause:1")
    assert "restrict_oom_score_adj = true" in toml and "netns_mounts_under_state_dir = true" in toml
    assert f'address = "{LAY.containerd_sock}"' in toml
    assert len(str(LAY.containerd_sock)) < 100  # a Unix socket path's limit is 108 bytes


def test_the_kubeconfig_holds_the_token_and_names_loopback() -> None:
    kc = json.loads(configs.kubeconfig("t0ken"))
    assert kc["users"][0]["user"]["token"] == "t0ken"
    assert kc["clusters"][0]["cluster"]["server"] == f"https://127.0.0.1:{configs.PORTS['apiserver']}"
