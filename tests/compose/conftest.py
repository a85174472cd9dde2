from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from lab.stack.engine import reachable


def _why_not() -> str | None:
    if os.environ.get("DOCKER_HOST") and reachable(os.environ["DOCKER_HOST"]):
        return None
    if reachable("unix:///var/run/docker.sock"):
        return None
    if os.geteuid() != 0:
        return "no Docker engine reachable and not root: cannot start a private one"
    missing = [c for c in ("dockerd", "docker-compose", "debootstrap") if shutil.which(c) is None]
    if missing:
        return f"not installed: {', '.join(missing)} (make setup installs them as root)"
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    reason = _why_not()
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.compose)
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))
