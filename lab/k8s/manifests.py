"""deploy/k8s's manifests made concrete for one run (pure: documents in, documents out), and
what the Job controller's pods must look like.

The run sets N (completions, parallelism, CHAOS_SHARDS), the seed and the trials, and gives
the results claim a volume: a hostPath PersistentVolume, ReadWriteMany, pre-bound to the claim
-- on one node every pod sees the same folder; a cluster of several nodes needs a real RWX
volume (NFS, CephFS, a cloud file share) or each shard uploading its folder (docs/shards.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

SHARDS_JOB, MERGE_JOB, CLAIM = "chaoslab-shards", "chaoslab-merge", "chaoslab-results"
INDEX = "batch.kubernetes.io/job-completion-index"
# What a run renders: deploy/k8s's objects, by "Kind/name".
NEEDED = (f"Job/{SHARDS_JOB}", f"Job/{MERGE_JOB}", f"PersistentVolumeClaim/{CLAIM}", "ConfigMap/chaoslab-topology")
Doc = dict[str, Any]


def load(folder: Path) -> dict[str, Doc]:
    """Every object of the folder's YAML files, by "Kind/name"."""
    out: dict[str, Doc] = {}
    for path in sorted(folder.glob("*.yaml")):
        try:
            docs = list(yaml.safe_load_all(path.read_text()))
        except yaml.YAMLError as exc:
            raise ValueError(f"{path.name} is not YAML: {str(exc).splitlines()[0]}") from None
        for doc in filter(None, docs):
            if not isinstance(doc, dict) or not isinstance(doc.get("metadata"), dict) or "kind" not in doc:
                raise ValueError(f"{path.name} holds a document without kind and metadata.name")
            out[f"{doc['kind']}/{doc['metadata'].get('name')}"] = doc
    missing = [k for k in NEEDED if k not in out]
    if missing:
        raise ValueError(f"no {', '.join(missing)} among {', '.join(sorted(out)) or 'its documents'}")
    return out


def _container(job: Doc, name: str) -> Doc:
    spec = job["spec"]["template"]["spec"]
    for c in spec.get("containers", []) + spec.get("initContainers", []):
        if c["name"] == name:
            return dict(c)
    raise KeyError(f"{job['metadata']['name']} has no container {name}")


def _set_env(container: Doc, values: dict[str, str]) -> None:
    env = [e for e in container.get("env", []) if e["name"] not in values]
    container["env"] = env + [{"name": k, "value": v} for k, v in values.items()]


def _with_container(job: Doc, name: str, values: dict[str, str]) -> Doc:
    """A copy of ``job`` whose container ``name`` has ``values`` in its environment."""
    import copy

    job = copy.deepcopy(job)
    spec = job["spec"]["template"]["spec"]
    for c in spec.get("containers", []) + spec.get("initContainers", []):
        if c["name"] == name:
            _set_env(c, values)
    return job


def results_volume(host_path: Path) -> Doc:
    return {
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": CLAIM},
        "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteMany"],
                 "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
                 "claimRef": {"namespace": "default", "name": CLAIM},
                 "hostPath": {"path": str(host_path), "type": "Directory"}},
    }  # fmt: skip


def render(docs: dict[str, Doc], shards: int, seed: int, trials: int, results: Path | None) -> tuple[list[Doc], Doc]:
    """(the objects of the shards' run, the merge Job); ``results``: the hostPath volume's folder
    (None: the claim is left to the cluster's storage)."""
    job = _with_container(docs[f"Job/{SHARDS_JOB}"], "runner",
                          {"CHAOS_SHARDS": str(shards), "CHAOS_SEED": str(seed), "CHAOS_TRIALS": str(trials)})  # fmt: skip
    job["spec"]["completions"] = job["spec"]["parallelism"] = shards
    merge = _with_container(docs[f"Job/{MERGE_JOB}"], "merge", {"CHAOS_SHARDS": str(shards), "CHAOS_SEED": str(seed)})
    claim = dict(docs[f"PersistentVolumeClaim/{CLAIM}"])
    objects = [results_volume(results)] if results is not None else []
    if results is not None:
        claim = {**claim, "spec": {**claim["spec"], "storageClassName": ""}}
    objects += [claim, docs["ConfigMap/chaoslab-topology"], job]
    return objects, merge


def quantity(value: str) -> float:
    """CPU in cores or memory in bytes from a Kubernetes quantity ("500m", "1Gi", "2")."""
    units = {"m": 1e-3, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "k": 1e3, "M": 1e6, "G": 1e9}
    for suffix in sorted(units, key=len, reverse=True):
        if value.endswith(suffix):
            return float(value[: -len(suffix)]) * units[suffix]
    return float(value)


def pod_requests(job: Doc) -> dict[str, float]:
    """What one pod asks the scheduler for: the sidecars' requests all run beside the main
    container's (init containers with restartPolicy: Always add up, Kubernetes >= 1.29)."""
    spec = job["spec"]["template"]["spec"]
    total = {"cpu": 0.0, "memory": 0.0}
    for c in spec.get("containers", []) + [
        i for i in spec.get("initContainers", []) if i.get("restartPolicy") == "Always"
    ]:
        for key, value in c.get("resources", {}).get("requests", {}).items():
            if key in total:
                total[key] += quantity(str(value))
    return total


def problems(pods: list[Doc], shards: int) -> list[str]:
    """What is wrong with the Job controller's pods for ``shards`` shards (empty: nothing)."""
    out: list[str] = []
    indexes = sorted(int(p["metadata"].get("annotations", {}).get(INDEX, -1)) for p in pods)
    if indexes != list(range(shards)):
        out.append(f"completion indexes {indexes}, want 0..{shards - 1}")
    for pod in pods:
        name, spec = pod["metadata"]["name"], pod["spec"]
        containers = spec.get("containers", []) + spec.get("initContainers", [])
        runner: Doc = next((c for c in containers if c["name"] == "runner"), {})
        env = {e["name"]: e for e in runner.get("env", [])}
        if "JOB_COMPLETION_INDEX" not in env:
            out.append(f"{name}: the runner has no JOB_COMPLETION_INDEX")
        if env.get("CHAOS_SHARDS", {}).get("value") != str(shards):
            out.append(f"{name}: CHAOS_SHARDS is {env.get('CHAOS_SHARDS', {}).get('value')}, want {shards}")
        claims = {v.get("persistentVolumeClaim", {}).get("claimName") for v in spec.get("volumes", [])}
        if CLAIM not in claims or {"shared", "topology"} - {v["name"] for v in spec.get("volumes", [])}:
            out.append(f"{name}: volumes {sorted(v['name'] for v in spec.get('volumes', []))}")
        for c in containers:
            if c.get("imagePullPolicy") == "Always":
                out.append(f"{name}/{c['name']}: imagePullPolicy Always (fails on a cluster with no registry)")
        if spec.get("automountServiceAccountToken") is not False:
            out.append(f"{name}: mounts a service account token it never uses")
    return out
