"""The images deploy/k8s names, for a cluster with no registry.

Built on a Docker engine as compose mode builds its offline images (lab.stack.compose.images:
one debootstrap rootfs with redis-server and Python, Toxiproxy's binaries, the chat service)
plus the runner (deploy/runner.Dockerfile on that rootfs, Chromium from Debian's mirror, the
lab's locked wheels downloaded on the host), saved as one tarball in the lab's cache (named by
the content of everything in it) and imported into the cluster's containerd, where each is
tagged with the name the manifests use. The pod sandbox's image ("pause") is a static C program
of ten lines in an OCI layout written here: no engine needed for it.
"""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path

from lab.common.config import LabConfig, cache_dir
from lab.stack.compose.images import content_hash, download_wheels
from lab.stack.compose.stack import ComposeStack

# What the manifests name -> the key of the offline image that stands in for it.
MANIFEST_IMAGES = {
    "redis:7.0.15": "REDIS_IMAGE",
    "ghcr.io/shopify/toxiproxy:2.12.0": "TOXIPROXY_IMAGE",
    "chaoslab-chat:latest": "CHAT_IMAGE",
    "chaoslab-runner:latest": "RUNNER_IMAGE",
}
PAUSE_IMAGE = "chaoslab.local/pause:1"
PAUSE_C = r"""
#include <signal.h>
#include <unistd.h>
#include <sys/wait.h>
static void reap(int s) { (void)s; while (waitpid(-1, 0, WNOHANG) > 0) {} }
static void stop(int s) { (void)s; _exit(0); }
int main(void) {
  signal(SIGINT, stop); signal(SIGTERM, stop); signal(SIGCHLD, reap);
  for (;;) pause();
}
"""


def containerd_name(ref: str) -> str:
    """A reference as containerd stores it: redis:7.0.15 -> docker.io/library/redis:7.0.15."""
    first = ref.split("/")[0]
    if "/" not in ref:
        return f"docker.io/library/{ref}"
    if "." not in first and ":" not in first and first != "localhost":
        return f"docker.io/{ref}"
    return ref


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def oci_tarball(name: str, files: dict[str, bytes], entrypoint: list[str]) -> bytes:
    """A one-layer image in an OCI layout tarball (what `ctr images import` reads): each file
    executable, at the root of the image's file system."""
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as t:
        for path, data in sorted(files.items()):
            info = tarfile.TarInfo(path)
            info.size, info.mode = len(data), 0o755
            t.addfile(info, io.BytesIO(data))
    layer_bytes = layer.getvalue()
    config = json.dumps({
        "architecture": "amd64", "os": "linux", "config": {"Entrypoint": entrypoint},
        "rootfs": {"type": "layers", "diff_ids": [_sha(layer_bytes)]},
    }).encode()  # fmt: skip
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": _sha(config), "size": len(config)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": _sha(layer_bytes),
                    "size": len(layer_bytes)}],
    }).encode()  # fmt: skip
    index = json.dumps({"schemaVersion": 2, "manifests": [{
        "mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": _sha(manifest), "size": len(manifest),
        "annotations": {"io.containerd.image.name": name, "org.opencontainers.image.ref.name": name.rsplit(":", 1)[1]},
    }]}).encode()  # fmt: skip
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as t:
        entries = {"oci-layout": b'{"imageLayoutVersion":"1.0.0"}', "index.json": index}
        entries.update({f"blobs/sha256/{_sha(b)[7:]}": b for b in (layer_bytes, config, manifest)})
        for path, data in entries.items():
            info = tarfile.TarInfo(path)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return out.getvalue()


def pause_tarball(work: Path) -> Path:
    """The sandbox image, compiled with gcc -static (the pod's namespaces' holder, reaps zombies)."""
    src, binary, tarball = work / "pause.c", work / "pause", work / "pause.tar"
    src.write_text(PAUSE_C)
    subprocess.run(["gcc", "-static", "-Os", "-s", "-o", str(binary), str(src)], check=True, timeout=120)
    tarball.write_bytes(oci_tarball(PAUSE_IMAGE, {"pause": binary.read_bytes()}, ["/pause"]))
    return tarball


def runner_inputs(root: Path) -> list[bytes | Path]:
    """What deploy/runner.Dockerfile copies (the wheels follow from requirements.lock)."""
    names = ("deploy/runner.Dockerfile", "requirements.lock", "pyproject.toml", "toxiproxy.json", "compose.yaml", "lab",
             "services")  # fmt: skip
    return [root / n for n in names]


def lab_images(cfg: LabConfig, say: Callable[[str], None] = print) -> tuple[Path, dict[str, str]]:
    """The tarball of the four images and {manifest name: its tag in the tarball}: from the
    cache when it holds this content (no engine started), else built on a Docker engine
    (started here if none runs, and stopped again)."""
    stack = ComposeStack(cfg)
    tags = stack.offline_tags()
    tags["RUNNER_IMAGE"] = f"chaoslab/runner:{content_hash(tags['CHAT_BASE_IMAGE'].encode(), *runner_inputs(cfg.root))}"
    wanted = [tags[k] for k in MANIFEST_IMAGES.values()]
    saved = cache_dir() / f"k8s-images-{content_hash(chr(10).join(wanted).encode())}.tar"
    aliases = {name: tags[key] for name, key in MANIFEST_IMAGES.items()}
    if saved.exists():
        return saved, aliases
    started = stack.engine.find() is None
    host = stack.engine.ensure()
    try:
        stack.offline_images(host)
        if not stack._has_image(host, tags["RUNNER_IMAGE"]):
            say("building the runner image (Debian's Chromium, the lab's wheels): about 1 min")
            download_wheels(cfg.root / "requirements.lock", cfg.root / "deploy" / "wheels")
            stack._docker(host, "build", "--network=host", "-q", "-t", tags["RUNNER_IMAGE"], "--build-arg",
                          f"BASE_IMAGE={tags['CHAT_BASE_IMAGE']}", "-f", str(cfg.root / "deploy" / "runner.Dockerfile"),
                          str(cfg.root), timeout=1800)  # fmt: skip
        stack._save(host, wanted, saved, prefix="k8s-images-")
        return saved, aliases
    finally:
        if started:
            stack.engine.stop()
