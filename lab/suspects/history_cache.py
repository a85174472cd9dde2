"""The history kept in process memory: a read may serve a copy older than the last write."""

from __future__ import annotations

import ast

from lab.suspects import Module, Source, Suspect, _facts, register

_CACHES = {"lru_cache", "cache", "cached", "ttl_cache"}


def _reads(f: ast.AST, containers: set[str]) -> bool:
    """A Redis read -- not a lookup in the very container being filled (``_clients.get``)."""
    return any(
        _facts.is_method(c) and _facts.tail(c) in _facts.READS and _facts.receiver(c) not in containers
        for c in _facts.calls(f)
    )


def _filled(f: ast.AST, module_level: set[str]) -> list[tuple[ast.Assign, set[str]]]:
    return [
        (n, names)
        for n in ast.walk(f)
        if isinstance(n, ast.Assign)
        and (
            names := {
                t.value.id
                for t in n.targets
                if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id in module_level
            }
        )
    ]


def _stores(m: Module) -> list[ast.AST]:
    """A function that reads Redis and puts something into a module-level container, or a
    cache decorator on such a function."""
    module_level = _facts.module_names(m.tree)
    out: list[ast.AST] = []
    for f in _facts.functions(m.tree):
        deco = [
            d
            for d in f.decorator_list
            if (_facts.tail(d) if isinstance(d, ast.Call) else getattr(d, "attr", getattr(d, "id", ""))) in _CACHES
        ]
        if deco and _reads(f, set()):
            out.append(deco[0])
            continue
        out += [n for n, names in _filled(f, module_level) if _reads(f, names)]
    return out


@register(
    "history_cache",
    diagnoses=("stale_reads", "history_from_copy"),
    mechanism="the history cached in process memory, not invalidated by writes",
)
def check(src: Source) -> list[Suspect]:
    return [
        src.suspect(
            "history_cache",
            m,
            n,
            "what Redis returned is kept in this process: a later read served from it misses the writes since",
        )
        for m in src.modules
        for n in _stores(m)
    ]
