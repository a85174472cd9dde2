"""The compose stack's images: the official ones when the engine has them or can pull them;
otherwise equivalents built offline -- one Debian rootfs from debootstrap (redis-server,
python3), a Toxiproxy image with the go-install binaries at the official paths, the chat image
from wheels downloaded on the host.

The offline images are tagged by a hash of their inputs (the packages, the binaries, the
Dockerfiles, the chat service's files): an engine that has the tags uses them as they are, and
anything else builds only what changed. Built images are also saved, as one tarball named by
their tags, in the machine's cache (lab.common.config.CACHE_DIR, outside any checkout): a fresh
engine data root -- a fresh clone -- loads them (about 1 minute on 2 cores) instead of
debootstrap and two builds (about 3)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from lab.common.config import ROOT
from lab.common.errors import LabError
from lab.common.files import write_atomic
from lab.stack.compose.docker_cli import DockerCli

OFFICIAL = {
    "redis": "redis:7.0.15",
    "toxiproxy": "ghcr.io/shopify/toxiproxy:2.12.0",
    "chat_base": "python:3.11-slim-bookworm",
}
# nodejs: the stand-in for an app's node:* images (lab.stack.compose.substitutes).
BASE_PACKAGES = "redis-server,python3,python3-venv,ca-certificates,nodejs"
TOXIPROXY_DOCKERFILE = Path(__file__).parent / "offline" / "toxiproxy.Dockerfile"
CHAT_DOCKERFILE = ROOT / "services" / "chat" / "Dockerfile"


def content_hash(*parts: bytes | Path) -> str:
    """12 hex digits of the inputs' bytes (files by path and content, folders file by file)."""
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, bytes):
            h.update(part)
            continue
        files = sorted(f for f in part.rglob("*") if f.is_file()) if part.is_dir() else [part]
        for f in files:
            if "__pycache__" in f.parts:
                continue
            h.update(f.relative_to(ROOT).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:12]


def chat_inputs() -> list[bytes | Path]:
    """What the chat image is built from (its Dockerfile's COPY sources)."""
    chat = ROOT / "services" / "chat"
    return [CHAT_DOCKERFILE, ROOT / "services" / "__init__.py", chat]


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
        """Official images when available; else the offline equivalents: the tags of this
        content if the engine has them, else loaded from the cache, else built (and saved)."""
        if all(self._has_image(host, r) or self._pullable(host, r) for r in OFFICIAL.values()):
            return {}
        return self.offline_images(host)

    def offline_tags(self) -> dict[str, str]:
        """The offline equivalents' tags: what their content is named, engine or not (lab k8s
        loads them into a cluster with no registry, from its own cached tarball if it has one)."""
        self._wheels()
        base = f"chaoslab/base:bookworm-{content_hash(BASE_PACKAGES.encode())}"
        toxiproxy = f"chaoslab/toxiproxy:2.12.0-{content_hash(*self._toxiproxy_binaries(), TOXIPROXY_DOCKERFILE)}"
        chat = f"chaoslab/chat:{content_hash(base.encode(), *chat_inputs())}"
        return {"REDIS_IMAGE": base, "TOXIPROXY_IMAGE": toxiproxy, "CHAT_BASE_IMAGE": base, "CHAT_IMAGE": chat}

    def offline_images(self, host: str) -> dict[str, str]:
        """The offline equivalents' tags, each present on the engine at ``host``."""
        named = self.offline_tags()
        base, toxiproxy, chat = named["REDIS_IMAGE"], named["TOXIPROXY_IMAGE"], named["CHAT_IMAGE"]
        tags = [base, toxiproxy, chat]
        saved = self.cache / f"images-{content_hash(chr(10).join(tags).encode())}.tar"
        if not all(self._has_image(host, t) for t in tags) and saved.exists():
            with open(saved, "rb") as fh:
                self._docker(host, "load", "-q", stdin=fh, timeout=900)
        if not all(self._has_image(host, t) for t in tags):
            self._base_image(host, base)
            self._toxiproxy_image(host, toxiproxy, base)
            self._build(host, chat, base, CHAT_DOCKERFILE, ROOT)
        if not saved.exists():
            self._save(host, tags, saved)
        return named

    def _save(self, host: str, tags: list[str], saved: Path, prefix: str = "images-") -> None:
        """The images as one tarball in the cache, replacing older ones of ``prefix`` (one set is
        kept)."""
        self.cache.mkdir(parents=True, exist_ok=True)
        partial = saved.with_suffix(".part")
        try:
            self._docker(host, "save", "-o", str(partial), *tags, timeout=900)
            partial.rename(saved)  # only a complete tarball is ever cached
        finally:
            partial.unlink(missing_ok=True)
        for old in self.cache.glob(f"{prefix}*.tar"):
            if old != saved:
                old.unlink(missing_ok=True)

    def _base_image(self, host: str, tag: str) -> None:
        if self._has_image(host, tag):
            return
        tarball = self.cache / f"{tag.split(':')[-1]}.tar"
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
            self._docker(host, "import", "-", tag, stdin=fh, timeout=600)

    def _toxiproxy_binaries(self) -> list[Path]:
        found = [self.cfg.bin_dir / name for name in ("toxiproxy-server", "toxiproxy-cli")]
        for src in found:
            if not src.exists():
                raise LabError(
                    f"no {src} to build the offline Toxiproxy image from",
                    "run `make setup` (builds Toxiproxy with go install)",
                )
        return found

    def _build(self, host: str, tag: str, base: str, dockerfile: Path, context: Path) -> None:
        """One offline image from ``dockerfile`` on the offline base, unless the engine has it."""
        if not self._has_image(host, tag):
            self._docker(
                host, "build", "-q", "-t", tag, "--build-arg", f"BASE_IMAGE={base}", "-f", str(dockerfile), str(context),
                timeout=900,
            )  # fmt: skip

    def _toxiproxy_image(self, host: str, tag: str, base: str) -> None:
        if self._has_image(host, tag):
            return
        ctx = Path(tempfile.mkdtemp(prefix="chaoslab-tpctx-"))
        try:
            for src in self._toxiproxy_binaries():
                shutil.copy(src, ctx / src.name)
            self._build(host, tag, base, TOXIPROXY_DOCKERFILE, ctx)
        finally:
            shutil.rmtree(ctx, ignore_errors=True)

    def _wheels(self) -> None:
        """The chat image's wheels, downloaded on the host (no network inside the build)."""
        chat = self.cfg.root / "services" / "chat"
        download_wheels(chat / "requirements.txt", chat / "wheels")


def download_wheels(req: Path, wheels: Path) -> None:
    """The wheels of a requirements file for Debian bookworm's Python 3.11 on x86_64, into
    ``wheels`` (a build behind a proxy with its own CA cannot reach PyPI from inside). pip
    evaluates markers against the Python running it: a line whose marker this one does not match
    (async-timeout, for Python < 3.11.3) is downloaded on its own. Skipped when ``wheels`` holds
    the set for this file's content already."""
    stamp = wheels / ".requirements.sha"
    want = hashlib.sha256(req.read_bytes()).hexdigest()
    if stamp.exists() and stamp.read_text() == want:
        return
    pinned = [line.split(";")[0].strip() for line in req.read_text().splitlines() if ";" in line.split("#")[0]]
    target = ["--python-version", "3.11", "--platform", "manylinux2014_x86_64", "--platform", "manylinux_2_28_x86_64"]
    pip = [sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", *target, "-d", str(wheels)]
    for args in (["-r", str(req)], *([["--no-deps", *pinned]] if pinned else [])):
        res = subprocess.run([*pip, *args], capture_output=True, text=True, timeout=600)
        if res.returncode != 0:
            raise LabError(f"pip download of the wheels for {req.name} failed: {res.stderr[-300:]}")
    write_atomic(stamp, want)  # a half-written stamp would match no input: only a whole one
