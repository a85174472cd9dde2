"""What a node leaves behind is found against the record of the machine before it started, and
removed; nothing that was there before is touched."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.k8s import cleanup
from lab.k8s.configs import Layout


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Layout:
    kubelet, cni = tmp_path / "var-lib-kubelet", tmp_path / "var-lib-cni"
    cni.mkdir()
    (cni / "theirs").write_text("a file that was there before")
    monkeypatch.setattr(cleanup, "HOST_DIRS", (kubelet, cni))
    rules = ["*filter", ":INPUT ACCEPT", "COMMIT"]
    monkeypatch.setattr(cleanup, "iptables_rules", lambda: list(rules))
    monkeypatch.setattr(cleanup, "bridge_exists", lambda: False)
    monkeypatch.setattr(cleanup, "cgroup_dirs", lambda: [])
    lay = Layout(tmp_path / "state")
    lay.state.mkdir()
    cleanup.record_host(lay)
    return lay


def test_what_the_run_added_is_found_and_removed(machine: Layout, tmp_path: Path) -> None:
    assert cleanup.leftovers(machine) == []
    (tmp_path / "var-lib-kubelet" / "pki").mkdir(parents=True)
    (tmp_path / "var-lib-cni" / "results").mkdir()
    (tmp_path / "var-lib-cni" / "results" / "chaoslab-1-eth0").write_text("{}")
    left = cleanup.leftovers(machine)
    assert f"file {tmp_path / 'var-lib-kubelet'}" in left
    assert f"file {tmp_path / 'var-lib-cni' / 'results' / 'chaoslab-1-eth0'}" in left
    assert not any("theirs" in line for line in left)
    cleanup.remove(machine)
    assert cleanup.leftovers(machine) == []
    assert (tmp_path / "var-lib-cni" / "theirs").exists() and not (tmp_path / "var-lib-kubelet").exists()


def test_an_added_iptables_rule_is_reported(machine: Layout, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cleanup, "iptables_rules", lambda: ["*filter", ":INPUT ACCEPT", "-A INPUT -j KUBE-X", "COMMIT"])
    assert cleanup.leftovers(machine) == ["iptables rule added: -A INPUT -j KUBE-X"]


def test_mounts_under_the_run_folders_deepest_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    info = tmp_path / "mountinfo"
    info.write_text(
        "22 1 0:5 / /run/chaoslab-k8s-1 rw - tmpfs tmpfs rw\n"
        "23 22 0:6 / /run/chaoslab-k8s-1/netns/cni-1 rw - nsfs nsfs rw\n"
        "24 1 0:7 / /run/chaoslab-k8s-10 rw - tmpfs tmpfs rw\n"
        "25 1 0:8 / /srv/my\\040state/kubelet rw - ext4 /dev/vda rw\n"
    )
    monkeypatch.setattr(cleanup, "MOUNTINFO", info)
    found = cleanup.mounts_under(Path("/run/chaoslab-k8s-1"), Path("/srv/my state"))
    assert found == ["/srv/my state/kubelet", "/run/chaoslab-k8s-1/netns/cni-1", "/run/chaoslab-k8s-1"]
