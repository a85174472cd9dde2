"""The write handed to a thread or executor the answer does not wait for."""

from __future__ import annotations

import ast

from lab.suspects import Module, Source, Suspect, _facts, register


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
            and _facts.tail(n) in ("join", "result", "wait", "gather", "as_completed")
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
        for c in _facts.calls(f):
            name = _target(c)
            if name and name in src.writers and not _waited(f, c, up):
                out.append((c, name))
    return out


@register(
    "background_write",
    diagnoses=("acked_too_fast", "stored_after_answer", "replies_not_stored"),
    mechanism="the write handed to a thread or executor that the answer does not wait for",
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
