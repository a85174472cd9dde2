"""Files another process reads while the lab may be writing them: pidfiles, stack.json, the
compose override, toxiproxy.json. A reader must see the old file or the whole new one, never a
half-written one (a test read dockerd.pid the moment it existed, found it empty, and the run
left a private dockerd running; procs.read deletes a pidfile it cannot parse)."""

from __future__ import annotations

import os
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
