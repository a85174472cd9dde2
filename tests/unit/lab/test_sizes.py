"""The house rules of lab/: no function over 60 lines, no module over 350 -- a module you can
read in a sitting, a function you can hold in your head. A failure names file:line and size.
(Declarative tables may be longer; there is none today, so nothing is exempt.)"""

from __future__ import annotations

import ast
from pathlib import Path

LAB = Path(__file__).resolve().parents[3] / "lab"
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 350


def long_modules(paths: list[Path]) -> list[str]:
    return [f"{p}: {n} lines" for p in paths if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES]


def long_functions(paths: list[Path]) -> list[str]:
    out = []
    for p in paths:
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    out.append(f"{p}:{node.lineno} {node.name}: {n} lines")
    return out


def test_no_module_over_350_lines() -> None:
    long = long_modules(sorted(LAB.rglob("*.py")))
    assert not long, "split these modules:\n" + "\n".join(long)


def test_no_function_over_60_lines() -> None:
    long = long_functions(sorted(LAB.rglob("*.py")))
    assert not long, "split these functions:\n" + "\n".join(long)


def test_the_measures_catch_one_line_over(tmp_path: Path) -> None:
    ok, over = tmp_path / "ok.py", tmp_path / "over.py"
    ok.write_text("def f():\n" + "    x = 1\n" * 59 + "x = 2\n" * 290)  # 60 / 350 lines
    over.write_text("async def g():\n" + "    x = 1\n" * 60 + "x = 2\n" * 290)  # 61 / 351 lines
    assert long_functions([ok]) == [] and long_modules([ok]) == []
    assert long_functions([over]) == [f"{over}:1 g: 61 lines"]
    assert long_modules([over]) == [f"{over}: 351 lines"]


# A room a newcomer can take in at a glance; lab/investigate's rooms are held to it (rooms of
# one module per fault, defect or diagnosis are lists by design, and exempt).
MAX_ROOM_MODULES = 10


def test_investigates_rooms_hold_few_modules() -> None:
    crowded = []
    for folder in [LAB / "investigate", *sorted(p.parent for p in (LAB / "investigate").glob("*/__init__.py"))]:
        modules = [p.name for p in folder.glob("*.py") if p.name != "__init__.py"]
        if len(modules) > MAX_ROOM_MODULES:
            crowded.append(f"{folder}: {len(modules)} modules")
    assert not crowded, crowded
    assert not [p.name for p in (LAB / "investigate").glob("*.py") if p.name != "__init__.py"]
