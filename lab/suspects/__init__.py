"""Static suspects: lines of a Python backend that may cause the incident's mechanisms.

A suspect is not a finding. Each names the mechanism, the line, and the diagnoses of
``lab investigate`` that would prove it; only an experiment that draws one of those diagnoses
makes the line *proven* (lab/suspects/verdict.py). One check = one small module in this package,
registered by name with the mechanism and the diagnoses it points at. ruff does what it already
checks (RUF006, the ASYNC rules: lab/suspects/ruff.py); the lab's own AST checks do the rest.

May import: lab.common, lab.model.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab.common.errors import UsageError


@dataclass(frozen=True)
class Suspect:
    check: str  # the registered check's name
    path: str  # as shown: relative to the folder the scan was asked about
    line: int
    mechanism: str  # what the code does, in words
    diagnoses: tuple[str, ...]  # the diagnoses of lab investigate that would prove it
    detail: str  # why this line, in words
    code: str  # the line itself, stripped
    by: str = "lab"  # "lab" (its AST checks) or "ruff RUF006" etc.

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    def as_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "path": self.path,
            "line": self.line,
            "mechanism": self.mechanism,
            "diagnoses": list(self.diagnoses),
            "detail": self.detail,
            "code": self.code,
            "by": self.by,
        }


@dataclass
class Module:
    path: Path
    rel: str
    text: str
    tree: ast.Module
    imports: set[str] = field(default_factory=set)  # names bound by import statements

    def line(self, n: int) -> str:
        lines = self.text.splitlines()
        return lines[n - 1].strip() if 0 < n <= len(lines) else ""

    @property
    def async_redis(self) -> bool:
        """The module imports redis.asyncio (its clients are bound to an event loop)."""
        return "redis.asyncio" in self.text or "aioredis" in self.text


@dataclass
class Source:
    """Everything scanned, parsed once, with facts the checks share."""

    modules: list[Module]
    skipped: int = 0  # files that are not Python
    ruff: list[dict[str, Any]] = field(default_factory=list)  # ruff's findings (JSON objects)
    loop_per_request: bool = False  # Flask async views: a new event loop per request
    writers: set[str] = field(default_factory=set)  # functions that write to Redis (by name)

    def suspect(self, check: str, m: Module, node: ast.AST | int, detail: str, by: str = "lab") -> Suspect:
        c = REGISTRY[check]
        line = node if isinstance(node, int) else getattr(node, "lineno", 0)
        return Suspect(check, m.rel, line, c.mechanism, c.diagnoses, detail, m.line(line), by)


@dataclass(frozen=True)
class Check:
    name: str
    mechanism: str
    diagnoses: tuple[str, ...]
    fn: Callable[[Source], list[Suspect]]


REGISTRY: dict[str, Check] = {}


def register(
    name: str, *, mechanism: str, diagnoses: tuple[str, ...]
) -> Callable[[Callable[[Source], list[Suspect]]], Callable[[Source], list[Suspect]]]:
    def wrap(fn: Callable[[Source], list[Suspect]]) -> Callable[[Source], list[Suspect]]:
        if name in REGISTRY:
            raise ValueError(f"suspect check {name!r} registered twice")
        REGISTRY[name] = Check(name, mechanism, diagnoses, fn)
        return fn

    return wrap


def _load() -> None:
    for mod in pkgutil.iter_modules(__path__):
        if not mod.name.startswith("_"):  # verdict, show, ruff register nothing: harmless
            importlib.import_module(f"{__name__}.{mod.name}")


@dataclass
class Scan:
    suspects: list[Suspect]
    files: int
    skipped: int
    ruff_error: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "skipped_non_python": self.skipped,
            "ruff_error": self.ruff_error,
            "suspects": [s.as_json() for s in self.suspects],
        }


def _files(paths: Sequence[Path], root: Path) -> tuple[list[tuple[Path, str]], int]:
    """(python files with the name they are shown by -- relative to ``root`` where they lie
    under it --, non-Python files skipped)."""
    out: list[tuple[Path, str]] = []
    skipped = 0
    for p in paths:
        if not p.exists():
            raise UsageError(f"{p}: no such file or directory", "name the backend's source files or folders")
        found = sorted(x for x in p.rglob("*") if x.is_file()) if p.is_dir() else [p]
        for f in found:
            if p.is_dir() and any(
                part in ("__pycache__", "node_modules") or part.startswith(".") for part in f.relative_to(p).parts[:-1]
            ):
                continue
            if f.suffix != ".py":
                skipped += 1
                continue
            full = f.resolve()
            shown = str(full.relative_to(root)) if full.is_relative_to(root) else str(full)
            out.append((f, shown))
    return out, skipped


def parse(paths: Sequence[Path], root: Path | None = None) -> Source:
    """Parse every Python file under ``paths``; UsageError names a file that does not parse."""
    from lab.suspects import _facts

    files, skipped = _files(paths, (root or Path.cwd()).resolve())
    modules = []
    for f, shown in files:
        try:
            text = f.read_text(encoding="utf-8")
            tree = ast.parse(text, filename=str(f))
        except SyntaxError as exc:
            raise UsageError(
                f"{f}:{exc.lineno}: does not parse: {exc.msg}",
                "lab suspects reads Python 3 source; fix the file or leave it out",
            ) from None
        except (UnicodeDecodeError, OSError) as exc:
            raise UsageError(f"{f}: cannot be read: {exc}", "name readable UTF-8 Python files") from None
        modules.append(Module(f, shown, text, tree, _facts.imported_names(tree)))
    src = Source(modules, skipped)
    src.loop_per_request = _facts.loop_per_request(modules)
    src.writers = _facts.writers(modules)
    return src


def scan(paths: Iterable[Path | str], root: Path | None = None, use_ruff: bool = True) -> Scan:
    """The suspects in the files under ``paths`` (shown relative to ``root``, default the
    working directory), ordered by file and line."""
    from lab.suspects import ruff

    _load()
    src = parse([Path(p) for p in paths], root)
    ruff_error = None
    if use_ruff and src.modules:
        src.ruff, ruff_error = ruff.run([m.path for m in src.modules])
    seen: set[tuple[str, str, int]] = set()
    out: list[Suspect] = []
    for check in REGISTRY.values():
        for s in check.fn(src):
            if (s.check, s.path, s.line) not in seen:
                seen.add((s.check, s.path, s.line))
                out.append(s)
    out.sort(key=lambda s: (s.path, s.line, s.check))
    return Scan(out, len(src.modules), src.skipped, ruff_error)
