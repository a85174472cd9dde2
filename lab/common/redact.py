"""Secrets kept out of everything a run writes: the values of the environment variables a spec
names for its login, and the tokens a login returns, are replaced by ``[redacted]`` in the
terminal (a writer in front of stdout / stderr) and in every file of the run (rewritten on the
way out, whatever the run's end). A value shorter than ``MIN_LEN`` is not a secret worth the
name and would redact common words: it is refused where it is registered."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO, cast

MARK = "[redacted]"
MIN_LEN = 6
_secrets: set[str] = set()


def add(*values: str) -> None:
    for v in values:
        if len(v) >= MIN_LEN:
            _secrets.add(v)


def known() -> frozenset[str]:
    return frozenset(_secrets)


def text(s: str) -> str:
    # Longest first: a secret containing another is replaced whole.
    for v in sorted(_secrets, key=len, reverse=True):
        if v in s:
            s = s.replace(v, MARK)
    return s


class Writer:
    """A text stream that redacts what goes through it (the terminal)."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, s: str) -> int:
        self.inner.write(text(s))
        return len(s)

    def flush(self) -> None:
        self.inner.flush()

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


def writer(stream: TextIO) -> TextIO:
    """``stream`` redacted (once: a run inside another's scope keeps one Writer)."""
    return stream if isinstance(stream, Writer) else cast(TextIO, Writer(stream))


def scrub(paths: Iterable[Path]) -> int:
    """Rewrite every file under ``paths`` (files or folders) that holds a secret; a file whose
    name holds one is renamed. Returns how many files changed."""
    if not _secrets:
        return 0
    changed = 0
    for root in paths:
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for f in files:
            try:
                data = f.read_bytes()
            except OSError:
                continue
            clean = data
            for v in sorted(_secrets, key=len, reverse=True):
                clean = clean.replace(v.encode(), MARK.encode())
            if clean != data:
                f.write_bytes(clean)
                changed += 1
            if text(f.name) != f.name:
                f.rename(f.with_name(text(f.name)))
                changed += 1
    return changed


@contextmanager
def scope(env_names: Iterable[str], paths: Iterable[Path], terminal: bool = True) -> Iterator[None]:
    """For one run: the values of ``env_names`` are secrets, and so is any added while it lasts
    (a login's token, the values a probe logs in with). The terminal (sys.stdout / sys.stderr)
    is redacted while it lasts unless ``terminal`` is False (a pytest session: its capture swaps
    those streams itself), and ``paths`` are scrubbed when it ends (success, failure or Ctrl-C).
    The secrets stay known after it: the CLI's last line (an error) is redacted too."""
    add(*(os.environ.get(n, "") for n in env_names))
    out, err = sys.stdout, sys.stderr
    if terminal:
        sys.stdout, sys.stderr = writer(out), writer(err)
    try:
        yield
    finally:
        if terminal:
            sys.stdout, sys.stderr = out, err
        scrub([p for p in paths if p.exists()])


def clear() -> None:
    _secrets.clear()
