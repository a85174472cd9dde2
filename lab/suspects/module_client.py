"""One module-global redis.asyncio client in a server that runs a new event loop per request."""

from __future__ import annotations

import ast

from lab.suspects import Module, Source, Suspect, _facts, register

CONSTRUCTORS = {"Redis", "StrictRedis", "from_url", "RedisCluster"}


def _factories(src: Source) -> set[str]:
    """Functions of the source that return a new async client (``store.new_client``)."""
    out = set()
    for m in src.modules:
        if not m.async_redis:
            continue
        for f in _facts.functions(m.tree):
            ann = ast.unparse(f.returns) if f.returns is not None else ""
            returns_client = any(
                isinstance(n, ast.Return) and isinstance(n.value, ast.Call) and _facts.tail(n.value) in CONSTRUCTORS
                for n in ast.walk(f)
            )
            if "Redis" in ann or returns_client:
                out.add(f.name)
    return out


def _makes_client(node: ast.AST, m: Module, factories: set[str]) -> bool:
    # Either branch of a conditional (``Redis.from_url(...) if SHARED else None``), any side of
    # an ``or`` (``cached or Redis(...)``): a Flask app written unseen made its client so.
    if isinstance(node, ast.IfExp):
        return _makes_client(node.body, m, factories) or _makes_client(node.orelse, m, factories)
    if isinstance(node, ast.BoolOp):
        return any(_makes_client(v, m, factories) for v in node.values)
    if not isinstance(node, ast.Call):
        return False
    t = _facts.tail(node)
    return (t in CONSTRUCTORS and m.async_redis) or t in factories


def _global_stores(m: Module, factories: set[str]) -> list[ast.AST]:
    """Assignments that put a new client into a module-level name: at the top level, through
    ``global NAME``, or into a module-level container (``_clients[key] = new_client()``)."""
    module_level = _facts.module_names(m.tree)
    out: list[ast.AST] = []
    for n in m.tree.body:
        if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None and _makes_client(n.value, m, factories):
            out.append(n)
    for f in _facts.functions(m.tree):
        declared = {name for g in ast.walk(f) if isinstance(g, ast.Global) for name in g.names}
        for node in ast.walk(f):
            if not isinstance(node, ast.Assign) or not _makes_client(node.value, m, factories):
                continue
            for t in node.targets:
                if (isinstance(t, ast.Name) and t.id in declared) or (
                    isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id in module_level
                ):
                    out.append(node)
                    break
    return out


@register(
    "module_client",
    diagnoses=("errors_without_fault", "phantom_failures", "history_reads_failing", "history_flapping"),
    mechanism="one module-global redis.asyncio client shared across per-request event loops",
)
def check(src: Source) -> list[Suspect]:
    if not src.loop_per_request:
        return []  # one long-lived loop (Quart, an asyncio server): a shared client is fine
    factories = _factories(src)
    return [
        src.suspect(
            "module_client",
            m,
            n,
            "its connections belong to the loop of the request that opened them; later "
            "requests, each on a new loop (Flask async views), fail or read another's reply",
        )
        for m in src.modules
        for n in _global_stores(m, factories)
    ]
