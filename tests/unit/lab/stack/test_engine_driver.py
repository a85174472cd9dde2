"""The private engine's storage driver (lab.stack.engine.storage_driver): overlay2 exactly when
an overlayfs mounts on the data root's file system, and the probe leaves nothing behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lab.stack.engine import storage_driver


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting an overlayfs needs root (the private engine does too)")
def test_the_probe_answers_and_leaves_nothing(tmp_path: Path) -> None:
    driver = storage_driver(tmp_path)
    assert driver in ("overlay2", "vfs")
    assert list(tmp_path.iterdir()) == []
    assert str(tmp_path) not in Path("/proc/mounts").read_text()


def test_not_root_or_no_overlay_falls_back_to_vfs(tmp_path: Path) -> None:
    """A data root that is not a folder: nothing can be mounted there, so vfs (never a crash)."""
    assert storage_driver(tmp_path / "missing") == "vfs"
