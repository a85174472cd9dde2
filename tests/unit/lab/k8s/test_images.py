"""The pod sandbox's image written as an OCI layout, and references as containerd stores them."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile

from lab.k8s import images


def _members(data: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(data)) as t:
        return {m.name: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}  # type: ignore[union-attr]


def test_an_oci_layout_whose_digests_hold() -> None:
    files = _members(images.oci_tarball("chaoslab.local/pause:1", {"pause": b"\x7fELF"}, ["/pause"]))
    index = json.loads(files["index.json"])
    entry = index["manifests"][0]
    assert entry["annotations"]["io.containerd.image.name"] == "chaoslab.local/pause:1"
    blobs = {k.rsplit("/", 1)[1]: v for k, v in files.items() if k.startswith("blobs/sha256/")}
    for digest, data in blobs.items():
        assert hashlib.sha256(data).hexdigest() == digest
    manifest = json.loads(blobs[entry["digest"][7:]])
    config = json.loads(blobs[manifest["config"]["digest"][7:]])
    assert config["config"]["Entrypoint"] == ["/pause"]
    layer = blobs[manifest["layers"][0]["digest"][7:]]
    assert config["rootfs"]["diff_ids"] == [manifest["layers"][0]["digest"]]
    with tarfile.open(fileobj=io.BytesIO(layer)) as t:
        member = t.getmember("pause")
        assert member.mode == 0o755 and t.extractfile(member).read() == b"\x7fELF"  # type: ignore[union-attr]


def test_references_as_containerd_names_them() -> None:
    assert images.containerd_name("redis:7.0.15") == "docker.io/library/redis:7.0.15"
    assert images.containerd_name("chaoslab/chat:abc") == "docker.io/chaoslab/chat:abc"
    assert images.containerd_name("ghcr.io/shopify/toxiproxy:2.12.0") == "ghcr.io/shopify/toxiproxy:2.12.0"
    assert images.containerd_name("localhost/x:1") == "localhost/x:1"
    assert images.containerd_name("registry:5000/x:1") == "registry:5000/x:1"


def test_every_image_the_manifests_name_has_a_stand_in() -> None:
    import yaml

    from lab.common.config import ROOT

    named = set()
    for path in (ROOT / "deploy" / "k8s").glob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            spec = (doc or {}).get("spec", {}).get("template", {}).get("spec", {})
            named |= {c["image"] for c in spec.get("containers", []) + spec.get("initContainers", [])}
    assert named == set(images.MANIFEST_IMAGES)
