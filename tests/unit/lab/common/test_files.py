"""write_atomic: a reader sees the old file or the whole new one, never a part of it."""

from __future__ import annotations

import json
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

from lab.common.files import owned_tmp, sweep_tmp, write_atomic


def test_writes_and_replaces_leaving_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "dockerd.pid"
    write_atomic(path, "first")
    write_atomic(path, "second")
    assert path.read_text() == "second"
    assert [p.name for p in tmp_path.iterdir()] == ["dockerd.pid"]


def test_a_failed_write_keeps_the_old_file_and_removes_its_temporary(tmp_path: Path) -> None:
    path = tmp_path / "stack.json"
    write_atomic(path, "old")
    with pytest.raises(UnicodeEncodeError):
        write_atomic(path, "\ud800")  # a lone surrogate: utf-8 cannot encode it, mid-write
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["stack.json"]


def test_a_reader_never_sees_a_partial_file(tmp_path: Path) -> None:
    """What the compose test met with write_text: the file existed and was empty. Here a reader
    polls while a writer rewrites a large document: every read parses."""
    path = tmp_path / "big.json"
    doc = json.dumps({"argv": ["x" * 200] * 500})
    done = threading.Event()
    bad: list[str] = []

    def read() -> None:
        while not done.is_set():
            try:
                text = path.read_text()
            except FileNotFoundError:
                continue
            try:
                json.loads(text)
            except ValueError:
                bad.append(f"{len(text)} bytes")

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for _ in range(300):
            write_atomic(path, doc)
    finally:
        done.set()
        reader.join()
    assert bad == []


def test_a_killed_owners_temp_folder_is_swept_and_a_live_ones_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    mine = owned_tmp("lab-t-")  # this process is alive: kept
    (mine / "inside").write_text("x")
    child = subprocess.Popen(["true"])
    child.wait()  # exited and reaped: its pid names no process now
    dead = tmp_path / f"lab-t-{child.pid}-abc"
    (dead / "profile").mkdir(parents=True)
    assert sweep_tmp("lab-t-") == [f"{dead.name} (its run, pid {child.pid}, was killed)"]
    assert mine.is_dir() and not dead.exists()
