"""The docker and docker-compose command lines, run for one compose project on one engine."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from lab.common.config import LabConfig
from lab.common.errors import LabError
from lab.stack.engine import DOCKER, Engine


def compose_command() -> list[str]:
    """docker-compose (1.29 here, where the lab is tested), else Compose v2's `docker compose`
    plugin, as most machines have it now. LAB_COMPOSE names one (e.g. "docker compose")."""
    if os.environ.get("LAB_COMPOSE"):
        return os.environ["LAB_COMPOSE"].split()
    found = shutil.which("docker-compose")
    if found is not None:
        return [found]
    try:
        v2 = subprocess.run([DOCKER, "compose", "version"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        v2 = False
    if v2:
        return [DOCKER, "compose"]
    raise LabError(
        "neither docker-compose nor the docker compose plugin is installed",
        "run `make setup` as root (installs docker-compose), or install Docker Compose v2",
    )


class DockerCli:
    """Mixed into ComposeStack: runs docker / docker-compose with the project's environment."""

    cfg: LabConfig
    project: str
    engine: "Engine"
    _images: dict[str, str]

    # ----------------------------------------------------------------- helpers
    def _env(self, host: str) -> dict[str, str]:
        env = {**os.environ, "DOCKER_HOST": host, "COMPOSE_PROJECT_NAME": self.project}
        env.update({f"LAB_{k.upper()}_PORT": str(v) for k, v in self.cfg.ports.items()})
        env.update(getattr(self, "_images", {}))  # the offline images, once chosen
        env.update(getattr(self, "_secret_env", {}))  # an app's Redis URL with its password
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

    def _compose_files(self) -> list[Path]:
        return [self.cfg.root / "compose.yaml"]

    def _compose_dir(self) -> Path:
        """Where relative paths of the first file resolve (compose's project directory)."""
        return self.cfg.root

    def _compose(
        self, host: str, *args: str, timeout: float = 600, files: list[Path] | None = None
    ) -> subprocess.CompletedProcess[str]:
        res = subprocess.run(
            [*compose_command(), *(a for f in files or self._compose_files() for a in ("-f", str(f))), *args],
            env=self._env(host),
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=self._compose_dir(),
        )
        if res.returncode != 0:
            raise LabError(f"docker-compose {' '.join(args[:2])} failed: {res.stderr.strip()[-600:]}")
        return res

    def _stop_engine_if_idle(self, host: str) -> str | None:
        """Stop the lab's private engine unless another project still has containers on it
        (the lab's compose stack and an investigation's app can share one engine)."""
        engine = self.engine
        if host != engine.private_host:
            return None  # DOCKER_HOST's or the system's engine: not the lab's to stop
        if self._docker(host, "ps", "-aq", check=False).stdout.strip():
            return None
        return engine.stop()
