"""The compose stack's images: the official ones when the engine has them or can pull them;
otherwise equivalents built offline -- one Debian rootfs from debootstrap (redis-server,
python3), cached as a tarball outside the engine's data root; a Toxiproxy image with the
go-install binaries at the official paths; the chat image from wheels downloaded on the host.
Built only when missing (and the chat image through the build cache)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from lab.common.errors import LabError
from lab.stack.compose.docker_cli import DockerCli

OFFICIAL = {
    "redis": "redis:7.0.15",
    "toxiproxy": "ghcr.io/shopify/toxiproxy:2.12.0",
    "chat_base": "python:3.11-slim-bookworm",
}
BASE_IMAGE = "chaoslab/base:bookworm"
TOXIPROXY_IMAGE = "chaoslab/toxiproxy:2.12.0"
BASE_PACKAGES = "redis-server,python3,python3-venv,ca-certificates"


class Images(DockerCli):
    """Mixed into ComposeStack."""

    cache: Path

    def _has_image(self, host: str, ref: str) -> bool:
        return self._docker(host, "image", "inspect", ref, check=False).returncode == 0

    def _pullable(self, host: str, ref: str) -> bool:
        try:
            return self._docker(host, "pull", "-q", ref, check=False, timeout=30).returncode == 0
        except subprocess.TimeoutExpired:
            return False

    # ----------------------------------------------------------------- images
    def _choose_images(self, host: str) -> dict[str, str]:
        """Official images when available; else the offline equivalents (built if missing)."""
        if all(self._has_image(host, r) or self._pullable(host, r) for r in OFFICIAL.values()):
            return {}
        self._base_image(host)
        self._toxiproxy_image(host)
        self._wheels()
        return {
            "REDIS_IMAGE": BASE_IMAGE,
            "TOXIPROXY_IMAGE": TOXIPROXY_IMAGE,
            "CHAT_BASE_IMAGE": BASE_IMAGE,
            "CHAT_IMAGE": "chaoslab/chat:offline",
        }

    def _base_image(self, host: str) -> None:
        if self._has_image(host, BASE_IMAGE):
            return
        tarball = self.cache / "base-bookworm.tar"
        if not tarball.exists():
            self.cache.mkdir(parents=True, exist_ok=True)
            rootfs = Path(tempfile.mkdtemp(prefix="chaoslab-rootfs-"))
            try:
                res = subprocess.run(
                    ["debootstrap", "--variant=minbase", f"--include={BASE_PACKAGES}", "bookworm", str(rootfs)],
                    capture_output=True,
                    text=True,
                    timeout=900,
                )
                if res.returncode != 0:
                    raise LabError(
                        f"debootstrap failed: {res.stdout[-300:]}{res.stderr[-300:]}",
                        "is Debian's mirror reachable? (apt-get update)",
                    )
                partial = tarball.with_suffix(".part")
                subprocess.run(["tar", "-C", str(rootfs), "-cf", str(partial), "."], check=True, timeout=600)
                partial.rename(tarball)  # only a complete tarball is ever cached
            finally:
                shutil.rmtree(rootfs, ignore_errors=True)
        with open(tarball, "rb") as fh:
            self._docker(host, "import", "-", BASE_IMAGE, stdin=fh, timeout=600)

    def _toxiproxy_image(self, host: str) -> None:
        if self._has_image(host, TOXIPROXY_IMAGE):
            return
        ctx = Path(tempfile.mkdtemp(prefix="chaoslab-tpctx-"))
        try:
            for name in ("toxiproxy-server", "toxiproxy-cli"):
                src = self.cfg.bin_dir / name
                if not src.exists():
                    raise LabError(
                        f"no {src} to build the offline Toxiproxy image from",
                        "run `make setup` (builds Toxiproxy with go install)",
                    )
                shutil.copy(src, ctx / name)
            self._docker(
                host,
                "build",
                "-q",
                "-t",
                TOXIPROXY_IMAGE,
                "--build-arg",
                f"BASE_IMAGE={BASE_IMAGE}",
                "-f",
                str(Path(__file__).parent / "toxiproxy.Dockerfile"),
                str(ctx),
            )
        finally:
            shutil.rmtree(ctx, ignore_errors=True)

    def _wheels(self) -> None:
        """The chat image's wheels, downloaded on the host (no network inside the build)."""
        wheels = self.cfg.root / "services" / "chat" / "wheels"
        req = self.cfg.root / "services" / "chat" / "requirements.txt"
        stamp = wheels / ".requirements.sha"
        want = hashlib.sha256(req.read_bytes()).hexdigest()
        if stamp.exists() and stamp.read_text() == want:
            return
        res = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--only-binary=:all:",
                "--python-version",
                "3.11",
                "--platform",
                "manylinux2014_x86_64",
                "-r",
                str(req),
                "-d",
                str(wheels),
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if res.returncode != 0:
            raise LabError(f"pip download of the chat image's wheels failed: {res.stderr[-300:]}")
        stamp.write_text(want)
