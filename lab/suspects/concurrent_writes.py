"""Two writes of one turn started concurrently: nothing orders them in the stored list."""

from __future__ import annotations

import ast

from lab.suspects import Module, Source, Suspect, _facts, register


def _scheduled_writer(call: ast.Call, src: Source, m: Module) -> bool:
    """``create_task(w(...))``, ``run_coroutine_threadsafe(w(...), loop)``, ``submit(w, ...)``."""
    if _facts.tail(call) not in _facts.SCHEDULE or not call.args:
        return False
    arg = call.args[0] if _facts.tail(call) != "run_in_executor" else (call.args[1] if len(call.args) > 1 else None)
    if isinstance(arg, ast.Call):
        return _facts.writes(arg, src.writers, m.imports)
    return isinstance(arg, ast.Name) and arg.id in src.writers


def _schedulers(src: Source) -> set[str]:
    """Functions that start a write and hand back its task/future (``_store_later``)."""
    out = set()
    for m in src.modules:
        for f in _facts.functions(m.tree):
            if any(
                isinstance(n, ast.Return) and isinstance(n.value, ast.Call) and _scheduled_writer(n.value, src, m)
                for n in ast.walk(f)
            ):
                out.add(f.name)
    return out


@register(
    "concurrent_writes",
    diagnoses=("writes_out_of_order",),
    mechanism="the rows of a turn written by concurrent tasks, nothing ordering them",
)
def check(src: Source) -> list[Suspect]:
    later = _schedulers(src)
    out = []
    for m in src.modules:
        for f in _facts.functions(m.tree):
            if f.name in later:
                continue
            started = sorted(
                (
                    c
                    for c in _facts.calls(f)
                    if _scheduled_writer(c, src, m) or (isinstance(c.func, ast.Name) and c.func.id in later)
                ),
                key=lambda c: c.lineno,
            )
            gathers = [
                c
                for c in _facts.calls(f)
                if _facts.tail(c) == "gather"
                and sum(isinstance(a, ast.Call) and _facts.writes(a, src.writers, m.imports) for a in c.args) >= 2
            ]
            if len(started) >= 2:
                out.append(
                    src.suspect(
                        "concurrent_writes",
                        m,
                        started[0],
                        f"writes started here and on line {started[1].lineno} run at the same "
                        "time: whichever finishes first is stored first",
                    )
                )
            out += [
                src.suspect(
                    "concurrent_writes",
                    m,
                    g,
                    "writes gathered concurrently: their order in the stored list is whichever finishes first",
                )
                for g in gathers
            ]
    return out
