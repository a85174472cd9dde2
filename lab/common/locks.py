"""One run per folder: an exclusive file lock, refused at once when another process holds it."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def exclusive(lock_file: Path, busy: Exception) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_file`` for the duration; raise ``busy`` at once if another
    process holds it (two runs on one folder would stop each other's services as leftovers)."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_file, "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise busy from None
        yield
