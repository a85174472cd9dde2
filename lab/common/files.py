"""Files another process reads while the lab may be writing them: pidfiles, stack.json, the
compose override, toxiproxy.json. A reader must see the old file or the whole new one, never a
half-written one (a test read dockerd.pid the moment it existed, found it empty, and the run
left a private dockerd running; procs.read deletes a pidfile it cannot parse)."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from pathlib import Path


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically: a temporary file beside it (the same file system,
    so the rename is atomic), then os.replace. The temporary name is unique per process and
    thread and ends in ``.tmp``, so globs such as ``*.pid`` never see it; created with open()
    it gets the umask's usual mode (a container's non-root user may read toxiproxy.json)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def owned_tmp(prefix: str) -> Path:
    """A temporary folder named for this process (``<prefix><pid>-XXXX``), so a later run can
    tell one whose owner was killed (sweep_tmp) from one still in use."""
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-"))


def sweep_tmp(prefix: str) -> list[str]:
    """Remove the owned_tmp folders whose owner process is gone (a SIGKILLed lab cannot remove
    its own); report each. A folder whose pid is alive -- its owner, or a process that took the
    pid since -- is left alone."""
    removed = []
    for folder in Path(tempfile.gettempdir()).glob(prefix + "*"):
        pid = folder.name[len(prefix) :].split("-", 1)[0]
        if not pid.isdigit() or Path(f"/proc/{pid}").exists():
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(f"{folder.name} (its run, pid {pid}, was killed)")
    return removed
