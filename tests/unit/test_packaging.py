"""pyproject.toml fits a library: the runtime dependencies are what lab/ and services/ import or
run, the examples' libraries and the project's own tools are extras, the lock pins every one of
them, and every file a run reads besides the code is package data."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import subprocess
import sys
import tomllib
from fnmatch import fnmatch
from pathlib import Path

from lab.common.config import ROOT

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
# Run by the lab, not imported: pytest's plugins for the user's tests (pytest --lab-target, --lab-trials)
# and ruff (lab suspects runs it as a program).
RUN_NOT_IMPORTED = {"pytest-playwright", "pytest-repeat", "ruff"}
# Files of the checkout's own tools: the built-in service's image (compose mode builds it from the checkout).
CHECKOUT_ONLY = {"services/chat/Dockerfile", "services/chat/requirements.txt", "services/chat/wheels/.gitkeep"}


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", re.split(r"[\[<>=;\s]", name, maxsplit=1)[0]).lower()


def third_party(*dirs: str) -> set[str]:
    """The distributions whose modules the files under ``dirs`` import."""
    dists = importlib.metadata.packages_distributions()
    found: set[str] = set()
    for d in dirs:
        for f in (ROOT / d).rglob("*.py"):
            if "node_modules" in f.parts:
                continue
            for node in ast.walk(ast.parse(f.read_text())):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                for n in names:
                    top = n.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in ("lab", "services", "tests"):
                        if not _local(f, top, ROOT / d):  # a project's own package (Django's chat/)
                            found |= {norm(x) for x in dists.get(top, [top])}
    return found


def _local(f: Path, top: str, root: Path) -> bool:
    """``top`` is a project's own: a package or module in a folder above ``f`` (inside ``root``)
    that is no package itself -- the project's root, on its sys.path (Django's chat/ beside its
    manage.py), not a module of a package named like a distribution (lab/stack/toxiproxy.py)."""
    return any(
        ((p / top).is_dir() or (p / f"{top}.py").is_file()) and not (p / "__init__.py").is_file()
        for p in f.parents
        if p.is_relative_to(root)
    )


def runtime() -> set[str]:
    return {norm(d) for d in PROJECT["project"]["dependencies"]}


def test_runtime_dependencies_are_what_the_lab_imports_or_runs() -> None:
    imported = third_party("lab", "services")
    declared = runtime()
    # A dependency of a declared one may be imported directly (werkzeug comes with flask) -- but then
    # it is declared too, unless the declared one guarantees it.
    via_flask = {"werkzeug"}
    assert imported - declared - via_flask == set(), "imported but not a runtime dependency"
    assert declared - imported - RUN_NOT_IMPORTED == set(), "a runtime dependency nothing imports"


def test_the_examples_and_the_projects_tools_are_extras_and_locked() -> None:
    extras = {k: {norm(d) for d in v} for k, v in PROJECT["project"]["optional-dependencies"].items()}
    examples = third_party("examples") - runtime()
    missing = examples - extras["examples"] - {"pydantic", "starlette", "httpx"}  # fastapi's and openai's own
    assert missing == set(), f"the examples import {missing}: add them to [examples]"
    assert {"mypy", "pytest-xdist", "pytest-timeout"} <= extras["dev"]
    locked = {norm(line) for line in (ROOT / "requirements.lock").read_text().splitlines() if "==" in line}
    everything = runtime() | extras["examples"] | extras["dev"]
    assert everything - locked == set(), "named in pyproject.toml but not pinned in requirements.lock"


def test_every_file_a_run_reads_is_package_data() -> None:
    data = PROJECT["tool"]["setuptools"]["package-data"]
    tracked = subprocess.run(
        ["git", "ls-files", "lab", "services"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    for f in tracked:
        if f.endswith(".py") or f in CHECKOUT_ONLY:
            continue
        package, rel = _package_of(Path(f))
        globs = data.get(package, [])
        assert any(fnmatch(rel, g) for g in globs), f"{f} is not in [tool.setuptools.package-data] {package}"


def _package_of(f: Path) -> tuple[str, str]:
    """The innermost package holding f, and f relative to it."""
    for parent in f.parents:
        if (ROOT / parent / "__init__.py").is_file():
            return ".".join(parent.parts), f.relative_to(parent).as_posix()
    raise AssertionError(f"{f} is in no package")
