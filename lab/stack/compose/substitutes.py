"""An app's own images on an engine that cannot pull them (a machine with no registry, as the
lab's CI has): the few official images an app's compose file commonly names -- ``redis:*``,
``node:*`` and ``python:*`` -- stood in for by equivalents built from the lab's offline base
image, and tagged with the names the app's file and Dockerfiles use, so both run unedited.

A build FROM a stand-in runs on the host's network (``build: network: host`` in the lab's
override): a machine without a registry is one whose engine is not the way out -- the lab's own
engine has no NAT at all -- while the host may reach a package index, so the Dockerfile's ``pip
install`` or ``npm ci`` work as they do on the host (the stand-ins trust the host's CAs).

A limit of machines without a registry, not a feature: the stand-ins are Debian's redis-server,
nodejs and python3 (3.11), whatever version the tag names; an Alpine tag's ``apk`` lines fail on
them. Any other image the engine lacks is refused with what to do. Where a registry is reachable
nothing here runs: images are pulled as usual."""

from __future__ import annotations

import re
import shutil
import ssl
import tempfile
from pathlib import Path
from typing import Any

from lab.common.errors import LabError
from lab.stack.compose.images import Images, content_hash

OFFLINE = Path(__file__).parent / "offline"
REDIS_DOCKERFILE = OFFLINE / "redis.Dockerfile"
NODE_DOCKERFILE = OFFLINE / "node.Dockerfile"
PYTHON_DOCKERFILE = OFFLINE / "python.Dockerfile"
# Repository names (Docker Hub's official images) that have a stand-in.
FAMILIES = ("redis", "node", "python")
LABEL = "org.chaoslab.stand-in"  # its value: the family (the offline Dockerfiles set it)
FROM = re.compile(r"^\s*FROM\s+(?:--platform=\S+\s+)?(\S+)", re.IGNORECASE | re.MULTILINE)


def family(ref: str) -> str | None:
    """'redis:7.2-bookworm', 'docker.io/library/node:20' -> 'redis', 'node'; else None."""
    name = ref.split("@")[0]
    if ":" in name.rsplit("/", 1)[-1]:
        name = name[: name.rindex(":")]
    for prefix in ("docker.io/", "library/"):
        name = name.removeprefix(prefix)
    return name if name in FAMILIES else None


def builds_from(config: dict[str, Any]) -> dict[str, list[str]]:
    """Each service that builds: the images its Dockerfile is FROM (stage names excluded)."""
    found: dict[str, list[str]] = {}
    for name, svc in config.get("services", {}).items():
        if "build" in svc:
            build = svc["build"] if isinstance(svc["build"], dict) else {"context": svc["build"]}
            dockerfile = Path(build["context"]) / build.get("dockerfile", "Dockerfile")
            text = dockerfile.read_text() if dockerfile.is_file() else ""
            stages = set(re.findall(r"\bAS\s+(\S+)", text, re.IGNORECASE))
            found[name] = [r for r in FROM.findall(text) if r not in stages and "$" not in r and r != "scratch"]
    return found


def needed(config: dict[str, Any]) -> list[str]:
    """Every image the resolved compose config runs or builds FROM."""
    refs = [svc["image"] for svc in config.get("services", {}).values() if "build" not in svc and "image" in svc]
    return sorted(set(refs + [r for refs_ in builds_from(config).values() for r in refs_]))


def host_network_builds(config: dict[str, Any], substituted: list[str]) -> dict[str, Any]:
    """The override's services entries that build on the host's network: those FROM a stand-in."""
    return {
        name: {"build": {"network": "host"}}
        for name, refs in builds_from(config).items()
        if set(refs) & set(substituted)
    }


def host_ca_bundle() -> bytes:
    """What this host's OpenSSL trusts (SSL_CERT_FILE first, as Python's ssl reads it); b"" if
    it names no file."""
    paths = ssl.get_default_verify_paths()
    for candidate in (paths.cafile, paths.openssl_cafile):
        if candidate and Path(candidate).is_file():
            return Path(candidate).read_bytes()
    return b""


class Substitutes(Images):
    """Mixed into the app stack (lab.stack.compose.app)."""

    def _substitute(self, host: str, refs: list[str]) -> list[str]:
        """Tag a stand-in for each image the engine lacks and cannot pull; returns what it
        stood in for (the report says so: the app ran on stand-ins, not its own images)."""
        present = [r for r in refs if self._has_image(host, r)]
        # A stand-in an earlier run tagged is one still: said so, its build on the host's
        # network, and re-tagged to the current content.
        earlier = [r for r in present if family(r) and self._label(host, r) == family(r)]
        missing = [r for r in refs if r not in present and not self._pullable(host, r)]
        if not missing and not earlier:
            return []
        refused = [r for r in missing if family(r) is None]
        if refused:
            raise LabError(
                f"the app's compose file needs {', '.join(refused)}: not on the engine and no registry answers",
                "load it into the engine (docker load -i image.tar, DOCKER_HOST=... as the lab uses) or give "
                f"the engine a registry; stand-ins exist only for {', '.join(f + ':*' for f in FAMILIES)}",
            )
        base = self._choose_images(host).get("REDIS_IMAGE")  # the offline base, cached
        if base is None:  # the lab's own images were pulled: a registry answers, but not for these
            raise LabError(f"the engine cannot pull {', '.join(missing)}", "check the names, or docker login")
        for ref in missing + earlier:
            self._docker(host, "tag", self._stand_in(host, base, family(ref) or ""), ref)
        return sorted(missing + earlier)

    def _label(self, host: str, ref: str) -> str:
        fmt = '{{index .Config.Labels "' + LABEL + '"}}'
        return self._docker(host, "image", "inspect", "-f", fmt, ref, check=False).stdout.strip()

    def _stand_in(self, host: str, base: str, kind: str) -> str:
        """The stand-in image for one family, built on the offline base unless the engine has it."""
        if kind == "redis":
            tag = f"chaoslab/redis:offline-{content_hash(base.encode(), REDIS_DOCKERFILE, OFFLINE / 'redis-entrypoint.sh')}"
            self._build(host, tag, base, REDIS_DOCKERFILE, OFFLINE)
            return tag
        ca = host_ca_bundle()
        node = f"chaoslab/node:offline-{content_hash(base.encode(), NODE_DOCKERFILE, ca)}"
        if not self._has_image(host, node):
            context = Path(tempfile.mkdtemp(prefix="chaoslab-nodectx-"))
            try:
                (context / "host-ca.crt").write_bytes(ca)
                self._build(host, node, base, NODE_DOCKERFILE, context)
            finally:
                shutil.rmtree(context, ignore_errors=True)
        if kind == "node":
            return node
        python = f"chaoslab/python:offline-{content_hash(node.encode(), PYTHON_DOCKERFILE)}"
        self._build(host, python, node, PYTHON_DOCKERFILE, OFFLINE)
        return python
