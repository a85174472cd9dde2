"""An app's own images on an engine that cannot pull them (a machine with no registry, as the
lab's CI has): the few official images an app's compose file commonly names -- ``redis:*`` and
``node:*`` -- stood in for by equivalents built from the lab's offline base image, and tagged
with the names the app's file and Dockerfiles use, so both run unedited.

A limit of machines without a registry, not a feature: the stand-ins are Debian's redis-server
and nodejs, whatever version the tag names. Any other image the engine lacks is refused with
what to do. Where a registry is reachable nothing here runs: images are pulled as usual."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from lab.common.errors import LabError
from lab.stack.compose.images import Images, content_hash

OFFLINE = Path(__file__).parent / "offline"
REDIS_DOCKERFILE = OFFLINE / "redis.Dockerfile"
# Repository names (Docker Hub's official images) that have a stand-in.
FAMILIES = ("redis", "node")
FROM = re.compile(r"^\s*FROM\s+(?:--platform=\S+\s+)?(\S+)", re.IGNORECASE | re.MULTILINE)


def family(ref: str) -> str | None:
    """'redis:7.2-bookworm', 'docker.io/library/node:20' -> 'redis', 'node'; else None."""
    name = ref.split("@")[0]
    if ":" in name.rsplit("/", 1)[-1]:
        name = name[: name.rindex(":")]
    for prefix in ("docker.io/", "library/"):
        name = name.removeprefix(prefix)
    return name if name in FAMILIES else None


def needed(config: dict[str, Any]) -> list[str]:
    """Every image the resolved compose config runs or builds FROM (stage names excluded)."""
    refs: list[str] = []
    for svc in config.get("services", {}).values():
        if "build" in svc:
            build = svc["build"] if isinstance(svc["build"], dict) else {"context": svc["build"]}
            dockerfile = Path(build["context"]) / build.get("dockerfile", "Dockerfile")
            text = dockerfile.read_text() if dockerfile.is_file() else ""
            stages = set(re.findall(r"\bAS\s+(\S+)", text, re.IGNORECASE))
            refs += [r for r in FROM.findall(text) if r not in stages and "$" not in r and r != "scratch"]
        elif "image" in svc:
            refs.append(svc["image"])
    return sorted(set(refs))


class Substitutes(Images):
    """Mixed into the app stack (lab.stack.compose.app)."""

    def _substitute(self, host: str, refs: list[str]) -> list[str]:
        """Tag a stand-in for each image the engine lacks and cannot pull; returns what it
        stood in for (the report says so: the app ran on stand-ins, not its own images)."""
        missing = [r for r in refs if not self._has_image(host, r) and not self._pullable(host, r)]
        if not missing:
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
        redis_tag = f"chaoslab/redis:offline-{content_hash(base.encode(), OFFLINE / 'redis.Dockerfile', OFFLINE / 'redis-entrypoint.sh')}"
        for ref in missing:
            if family(ref) == "redis":
                self._build(host, redis_tag, base, REDIS_DOCKERFILE, OFFLINE)
                self._docker(host, "tag", redis_tag, ref)
            else:
                self._docker(host, "tag", base, ref)  # the base has nodejs; the app's Dockerfile says the rest
        return missing
