"""The docker and docker-compose command lines, run for one compose project on one engine."""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Any

from lab.common.config import LabConfig
from lab.common.errors import LabError
from lab.stack.engine import DOCKER


class DockerCli:
    """Mixed into ComposeStack: runs docker / docker-compose with the project's environment."""

    cfg: LabConfig
    project: str
    _images: dict[str, str]

    # ----------------------------------------------------------------- helpers
    def _env(self, host: str) -> dict[str, str]:
        env = {**os.environ, "DOCKER_HOST": host, "COMPOSE_PROJECT_NAME": self.project}
        env.update({f"LAB_{k.upper()}_PORT": str(v) for k, v in self.cfg.ports.items()})
        env.update(getattr(self, "_images", {}))  # the offline images, once chosen
        return env

    def _docker(
        self, host: str, *args: str, timeout: float = 300, check: bool = True, **kw: Any
    ) -> subprocess.CompletedProcess[str]:
        res = subprocess.run(
            [DOCKER, *args], env=self._env(host), capture_output=True, text=True, timeout=timeout, **kw
        )
        if check and res.returncode != 0:
            raise LabError(f"docker {' '.join(args[:3])} failed: {res.stderr.strip()[-400:]}")
        return res

    def _compose(self, host: str, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        compose = shutil.which("docker-compose")
        if compose is None:
            raise LabError("docker-compose is not installed", "run `make setup` as root")
        res = subprocess.run(
            [compose, "-f", str(self.cfg.root / "compose.yaml"), *args],
            env=self._env(host),
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=self.cfg.root,
        )
        if res.returncode != 0:
            raise LabError(f"docker-compose {' '.join(args[:2])} failed: {res.stderr.strip()[-600:]}")
        return res
