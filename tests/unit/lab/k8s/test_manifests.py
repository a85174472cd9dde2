"""deploy/k8s made concrete for a run, and what the Job controller's pods must look like."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from lab.common.config import ROOT
from lab.k8s import manifests

DOCS = manifests.load(ROOT / "deploy" / "k8s")


def _env(job: dict[str, Any], container: str) -> dict[str, str]:
    spec = job["spec"]["template"]["spec"]
    c = next(c for c in spec["containers"] + spec.get("initContainers", []) if c["name"] == container)
    return {e["name"]: e.get("value", "") for e in c.get("env", [])}


def test_render_sets_n_seed_and_trials_everywhere_and_leaves_the_files_alone() -> None:
    before = copy.deepcopy(DOCS)
    objects, merge = manifests.render(DOCS, 4, 7, 2, Path("/srv/results"))
    kinds = [o["kind"] for o in objects]
    assert kinds == ["PersistentVolume", "PersistentVolumeClaim", "ConfigMap", "Job"]
    job = objects[-1]
    assert job["spec"]["completions"] == job["spec"]["parallelism"] == 4
    assert _env(job, "runner") | {"LAB_RUN_DIR": ""} == _env(job, "runner") | {
        "CHAOS_SHARDS": "4", "CHAOS_SEED": "7", "CHAOS_TRIALS": "2", "LAB_RUN_DIR": ""}  # fmt: skip
    assert _env(merge, "merge")["CHAOS_SHARDS"] == "4" and _env(merge, "merge")["CHAOS_SEED"] == "7"
    volume, claim = objects[0], objects[1]
    assert volume["spec"]["hostPath"]["path"] == "/srv/results"
    assert volume["spec"]["claimRef"]["name"] == claim["metadata"]["name"] == manifests.CLAIM
    assert volume["spec"]["accessModes"] == claim["spec"]["accessModes"] == ["ReadWriteMany"]
    assert volume["spec"]["storageClassName"] == claim["spec"]["storageClassName"] == ""
    assert DOCS == before
    objects, _ = manifests.render(DOCS, 2, 1, 1, None)  # a cluster's own storage: no volume, the claim as written
    assert [o["kind"] for o in objects][0] == "PersistentVolumeClaim" and "storageClassName" not in objects[0]["spec"]


def test_quantities_and_a_pods_requests_with_its_sidecars() -> None:
    assert manifests.quantity("500m") == 0.5 and manifests.quantity("2") == 2.0
    assert manifests.quantity("1Gi") == 2**30 and manifests.quantity("768Mi") == 768 * 2**20
    job = {"spec": {"template": {"spec": {
        "initContainers": [{"name": "a", "restartPolicy": "Always", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}},
                           {"name": "once", "resources": {"requests": {"cpu": "4"}}}],
        "containers": [{"name": "main", "resources": {"requests": {"cpu": "400m", "memory": "1Gi"}}}]}}}}  # fmt: skip
    assert manifests.pod_requests(job) == pytest.approx({"cpu": 0.5, "memory": 64 * 2**20 + 2**30})


def test_three_shards_fit_a_two_cpu_node() -> None:
    need = manifests.pod_requests(DOCS[f"Job/{manifests.SHARDS_JOB}"])
    assert 3 * need["cpu"] <= 2.0 and 3 * need["memory"] <= 8 * 2**30


def _pod(index: int, shards: int = 3) -> dict[str, Any]:
    return {
        "metadata": {"name": f"p{index}", "annotations": {manifests.INDEX: str(index)}},
        "spec": {
            "automountServiceAccountToken": False,
            "volumes": [{"name": "shared", "emptyDir": {}}, {"name": "topology", "configMap": {}},
                        {"name": "results", "persistentVolumeClaim": {"claimName": manifests.CLAIM}}],
            "containers": [{"name": "runner", "imagePullPolicy": "IfNotPresent",
                            "env": [{"name": "CHAOS_SHARDS", "value": str(shards)},
                                    {"name": "JOB_COMPLETION_INDEX", "valueFrom": {}}]}],
        },
    }  # fmt: skip


def test_problems_of_the_pods() -> None:
    good = [_pod(i) for i in range(3)]
    assert manifests.problems(good, 3) == []
    assert manifests.problems(good[:2], 3) == ["completion indexes [0, 1], want 0..2"]
    bad = copy.deepcopy(good)
    bad[1]["spec"]["containers"][0]["imagePullPolicy"] = "Always"
    bad[2]["spec"]["automountServiceAccountToken"] = True
    bad[0]["spec"]["containers"][0]["env"] = [{"name": "CHAOS_SHARDS", "value": "2"}]
    found = manifests.problems(bad, 3)
    assert any("p1/runner: imagePullPolicy Always" in f for f in found)
    assert any("p2: mounts a service account token" in f for f in found)
    assert any("p0: the runner has no JOB_COMPLETION_INDEX" in f for f in found)
    assert any("p0: CHAOS_SHARDS is 2, want 3" in f for f in found)
