"""The write handed to a thread, an executor or a task that the answer does not wait for. A
task nobody even keeps is dangling_task's; one kept (in a set, as asyncio's documentation
advises) but never awaited before the answer is this one's: the answer leaves first all the same."""

from __future__ import annotations

import ast

from lab.suspects import Module, Source, Suspect, _facts, register
from lab.suspects.dangling_task import TASKS, _unkept


def _target(call: ast.Call) -> str:
    """The function a Thread/submit/run_in_executor call runs, by name ('' if not named)."""
    t = _facts.tail(call)
    node: ast.AST | None = None
    if t == "Thread":
        node = next((k.value for k in call.keywords if k.arg == "target"), None)
    elif t == "submit" and call.args:
        node = call.args[0]
    elif t == "run_in_executor" and len(call.args) > 1:
        node = call.args[1]
    elif t in TASKS and call.args and isinstance(call.args[0], ast.Call):
        node = call.args[0].func  # create_task(write(...)): the coroutine's function
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else ""


def _waited(f: ast.AST, call: ast.Call, up: dict[ast.AST, ast.AST]) -> bool:
    """The thread/future is kept in a name that is later joined, awaited or asked for its result."""
    parent = up.get(call)
    if not (isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name)):
        return isinstance(parent, ast.Await)
    name = parent.targets[0].id
    for n in ast.walk(f):
        if (
            isinstance(n, ast.Call)
            and _facts.tail(n) in ("join", "result", "wait", "gather", "as_completed", "shield", "wait_for")
            and (_facts.receiver(n) == name or any(isinstance(a, ast.Name) and a.id == name for a in n.args))
        ):
            return True
        if isinstance(n, ast.Await) and isinstance(n.value, ast.Name) and n.value.id == name:
            return True
    return False


def _unwaited(m: Module, src: Source) -> list[tuple[ast.Call, str]]:
    up = _facts.parents(m.tree)
    out = []
    for f in _facts.functions(m.tree):
        dangling = {id(n.value) for n in _unkept(f) if isinstance(n, (ast.Expr, ast.Assign))}
        for c in _facts.calls(f):
            name = _target(c)
            if name and name in src.writers and id(c) not in dangling and not _waited(f, c, up):
                out.append((c, name))
    return out


@register(
    "background_write",
    diagnoses=("acked_too_fast", "stored_after_answer", "replies_not_stored", "acked_write_refused"),
    mechanism="the write handed to a thread, an executor or a task that the answer does not wait for",
)
def check(src: Source) -> list[Suspect]:
    return [
        src.suspect(
            "background_write",
            m,
            c,
            f"`{name}` writes in the background: the answer can leave before the write is done, or when it failed",
        )
        for m in src.modules
        for c, name in _unwaited(m, src)
    ]
