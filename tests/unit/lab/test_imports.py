"""The module graph of lab/: no import cycle (function-level imports included: they hide cycles,
they do not remove them), rooms that import only the rooms their docstring allows (lower rooms
never import higher ones), and the pure layers stay free of the browser."""

from __future__ import annotations

import ast
import re
from pathlib import Path

LAB = Path(__file__).resolve().parents[3] / "lab"


def _modules() -> dict[str, Path]:
    out = {}
    for p in LAB.rglob("*.py"):
        parts = list(p.relative_to(LAB.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        for node in ast.walk(ast.parse(p.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [
                    f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in mods else node.module for a in node.names
                ]
            graph[m] |= {n for n in names if n in mods and n != m}
    return graph


def _reach(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for n in graph[todo.pop()]:
            if n not in seen:
                seen.add(n)
                todo.append(n)
    return seen


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_in_lab() -> None:
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_one() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_report_imports_neither_investigate_nor_the_runner() -> None:
    reached = _reach(_graph(), "lab.report") | _reach(_graph(), "lab.report.html")
    assert not {m for m in reached if m.startswith("lab.investigate") or m == "lab.runner.runner"}, sorted(reached)


def test_trial_model_checker_attribution_and_diagnoses_need_no_browser() -> None:
    """Imported in a fresh interpreter: none of them may load Playwright."""
    import subprocess
    import sys

    code = (
        "import sys, lab.model.history, lab.model.checker, lab.model.outcome, lab.model.attribution, lab.report, lab.diagnoses;"
        "lab.diagnoses._load();"
        "print(sorted(m for m in sys.modules if m.startswith('playwright')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=LAB.parent
    ).stdout.strip()
    assert out == "[]"


# lab/'s own modules at its root, beside the rooms (packages): the entry point, the package's
# version and the two faces for pytest.
ROOT_MODULES_MAX = 10


# Rooms with rooms of their own (each sub-package's docstring has its own "May import").
NESTED = ("lab.investigate",)


def _room(module: str) -> str:
    """``lab.model.checker`` -> ``lab.model``; ``lab.investigate.spec.parse`` ->
    ``lab.investigate.spec`` (a nested room); a module at lab/'s root is its own room."""
    parts = module.split(".")
    return ".".join(parts[:3] if ".".join(parts[:2]) in NESTED and len(parts) > 2 else parts[:2])


def _allowed() -> dict[str, set[str]]:
    """Each room's "May import:" line (its __init__ docstring): the rooms it may import."""
    out = {}
    nested = [p for n in NESTED for p in sorted(LAB.parent.joinpath(*n.split(".")).glob("*/__init__.py"))]
    for init in sorted(LAB.glob("*/__init__.py")) + nested:
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        m = re.search(r"^May import: (.*?)(?:\n\n|\Z)", doc, re.M | re.S)
        assert m, f"{init.relative_to(LAB.parent)}: its docstring says what it holds, then 'May import: ...'"
        room = ".".join(init.parent.relative_to(LAB.parent).parts)
        out[room] = set(re.findall(r"\blab(?:\.\w+)+", m.group(1)))
    return out


def _may(allowed: set[str], target: str) -> bool:
    """A room named in "May import" covers its nested rooms (``lab.investigate`` covers
    ``lab.investigate.run``)."""
    return any(target == a or target.startswith(a + ".") for a in allowed)


def test_every_room_says_what_it_may_import_and_imports_nothing_else() -> None:
    allowed = _allowed()
    wrong = []
    for m, deps in _graph().items():
        room = _room(m)
        if room not in allowed or room == "lab.cli":  # lab/ root modules and the CLI are the top
            continue
        for d in deps:
            target = _room(d)
            if target not in (room, "lab") and not _may(allowed[room], target):
                wrong.append(f"{m} imports {d} ({target} is not in {room}'s 'May import')")
    assert wrong == [], "\n".join(wrong)


def test_lower_rooms_never_import_higher_ones() -> None:
    """The rooms' allowances form one order: no room may import (even through others) a room
    that may import it."""
    allowed = _allowed()
    assert _cycles({r: {d for d in ds if d in allowed} for r, ds in allowed.items()}) == []
    for r in allowed:
        assert r not in _reach({k: {d for d in v if d in allowed} for k, v in allowed.items()}, r), r


def test_lab_root_holds_few_modules() -> None:
    root = sorted(p.name for p in LAB.glob("*.py"))
    assert len(root) <= ROOT_MODULES_MAX, root
