"""deploy/k8s and deploy/ci agree with compose.yaml, toxiproxy.json and the lab's ports: the same
images, the topology rendered for the pod's loopback, N the same everywhere, the runner on its
shard and the services it expects (structure only: no cluster runs here)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from lab.stack import topology
from lab.common.config import DEFAULT_PORTS, LabConfig

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"


def _docs(name: str) -> dict[str, dict[str, Any]]:
    return {d["kind"]: d for d in yaml.safe_load_all((K8S / name).read_text()) if d}


def _compose_image(service: str) -> str:
    image = yaml.safe_load((ROOT / "compose.yaml").read_text())["services"][service]["image"]
    m = re.fullmatch(r"\$\{[A-Z_]+:-(.+)\}", image)
    return m.group(1) if m else image


def _pod() -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    job = _docs("chaos-shards.yaml")["Job"]
    spec = job["spec"]["template"]["spec"]
    return job, {c["name"]: c for c in spec["initContainers"] + spec["containers"]}


def _env(c: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in c.get("env", [])}


def test_an_indexed_job_with_n_shards_everywhere() -> None:
    job, cs = _pod()
    spec = job["spec"]
    n = spec["completions"]
    assert spec["completionMode"] == "Indexed" and spec["parallelism"] == n >= 2
    runner = cs["runner"]
    assert _env(runner)["CHAOS_SHARDS"] == str(n)
    cmd = " ".join(runner["command"])
    assert "lab chaos --mode external --shard $((JOB_COMPLETION_INDEX + 1))/$CHAOS_SHARDS" in cmd
    assert "--reports /results" in cmd
    merge = _docs("merge-job.yaml")["Job"]["spec"]["template"]["spec"]["containers"][0]
    assert _env(merge)["CHAOS_SHARDS"] == str(n) and _env(merge)["CHAOS_SEED"] == _env(runner)["CHAOS_SEED"]
    assert "lab merge /results/*-s${CHAOS_SEED}-shard*of${CHAOS_SHARDS}" in " ".join(merge["command"])
    ci = yaml.safe_load((ROOT / "deploy" / "ci" / "github-actions.yml").read_text())
    assert ci["jobs"]["shard"]["strategy"]["matrix"]["shard"] == list(range(1, int(ci["env"]["SHARDS"]) + 1))
    assert ci["jobs"]["merge"]["needs"] == "shard"


def test_services_are_sidecars_with_the_compose_images() -> None:
    job, cs = _pod()
    inits = {c["name"] for c in job["spec"]["template"]["spec"]["initContainers"]}
    assert inits == {"redis", "toxiproxy", "chat"}
    assert all(cs[n]["restartPolicy"] == "Always" for n in inits)  # native sidecars
    for name in inits:
        assert cs[name]["image"] == _compose_image(name), name


def test_ports_and_topology_are_the_native_ones() -> None:
    _, cs = _pod()
    args = cs["redis"]["args"]
    assert args[args.index("--port") + 1] == str(DEFAULT_PORTS["redis"])
    assert args[args.index("--notify-keyspace-events") + 1] == "Ex"  # the expiry evidence
    assert args[args.index("--save") + 1] == ""  # no persistence, as natively
    assert f"-port={DEFAULT_PORTS['toxiproxy']}" in cs["toxiproxy"]["args"]
    assert f"--bind 127.0.0.1:{DEFAULT_PORTS['backend']}" in " ".join(cs["chat"]["command"])
    assert _env(cs["chat"])["CHAT_REDIS_URL"] == f"redis://127.0.0.1:{DEFAULT_PORTS['redis_proxy']}/0"
    rendered = json.loads(_docs("chaos-shards.yaml")["ConfigMap"]["data"]["toxiproxy.json"])
    cfg = LabConfig.from_env({})
    want = [p.as_json() for p in topology.render_native(topology.load(ROOT / "toxiproxy.json"), cfg)]
    assert rendered == want


def test_the_backend_log_is_shared_with_the_runner() -> None:
    job, cs = _pod()
    log = _env(cs["runner"])["LAB_BACKEND_LOG"]
    assert f">>{log} " in " ".join(cs["chat"]["command"])
    mounts = {c: {m["name"]: m["mountPath"] for m in cs[c]["volumeMounts"]} for c in ("chat", "runner")}
    assert mounts["chat"]["shared"] == mounts["runner"]["shared"] and log.startswith(mounts["runner"]["shared"])
    vols = {v["name"]: v for v in job["spec"]["template"]["spec"]["volumes"]}
    assert (
        vols["results"]["persistentVolumeClaim"]["claimName"]
        == _docs("results-pvc.yaml")["PersistentVolumeClaim"]["metadata"]["name"]
    )
