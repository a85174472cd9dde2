"""An asyncio task nobody keeps or awaits: under Flask the view's loop cancels it on return."""

from __future__ import annotations

import ast
from pathlib import Path

from lab.suspects import Source, Suspect, _facts, register

TASKS = {"create_task", "ensure_future"}


def _unkept(f: ast.AST) -> list[ast.stmt]:
    """``asyncio.create_task(...)`` as a statement, or ``t = ...`` with ``t`` never read again
    (not awaited, gathered, kept or returned). ruff's RUF006 sees both; this is the lab's own
    version, for when ruff cannot run."""
    used = _facts.names_used(f)
    out: list[ast.stmt] = []
    for n in ast.walk(f):
        if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call) and _facts.tail(n.value) in TASKS:
            out.append(n)
        elif (
            isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Call)
            and _facts.tail(n.value) in TASKS
            and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Name)
            and not used.get(n.targets[0].id)
        ):
            out.append(n)
    return out


@register(
    "dangling_task",
    diagnoses=("replies_not_stored", "acked_too_fast", "stored_after_answer", "acked_write_refused"),
    mechanism="a write scheduled as a task nobody awaits",
)
def check(src: Source) -> list[Suspect]:
    where = (
        "Flask runs each async view in asyncio.run: the tasks still pending when it returns "
        "are cancelled, so the write may never run"
        if src.loop_per_request
        else "the loop keeps only a weak reference: the task can vanish mid-write, its errors unseen"
    )
    by_file = {m.path.resolve(): m for m in src.modules}
    out = []
    for f in src.ruff:
        m = by_file.get(Path(str(f.get("filename", ""))).resolve())
        if m is not None and f.get("code") == "RUF006":
            out.append(
                src.suspect(
                    "dangling_task",
                    m,
                    int(f["location"]["row"]),
                    f"the task's result is not kept (ruff RUF006); {where}",
                    by="ruff RUF006",
                )
            )
    for m in src.modules:
        for fn in _facts.functions(m.tree):
            for n in _unkept(fn):
                out.append(src.suspect("dangling_task", m, n, f"nothing keeps or awaits the task; {where}"))
    return out
