"""AST facts the suspect checks share: call names, Redis commands, which functions write,
what a name is bound to, whether the server runs an event loop per request."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from typing import Protocol


class Module(Protocol):
    """What these facts read of a parsed file (lab.suspects.Module)."""

    tree: ast.Module
    text: str
    imports: set[str]


# Redis commands that change a conversation (method names of redis-py clients and pipelines).
# `append` and argument-less `set` are left out: list.append and Event.set are far commoner.
WRITES = {
    "rpush",
    "lpush",
    "rpushx",
    "lpushx",
    "linsert",
    "lset",
    "setex",
    "psetex",
    "setnx",
    "hset",
    "hmset",
    "hsetnx",
    "xadd",
    "zadd",
    "sadd",
    "execute",
    "eval",
    "evalsha",
    "fcall",
    "json_set",
    "mset",
}
EXPIRES = {"expire", "pexpire", "expireat", "pexpireat"}
READS = {
    "lrange",
    "get",
    "mget",
    "hgetall",
    "hget",
    "hmget",
    "zrange",
    "xrange",
    "xrevrange",
    "smembers",
    "llen",
    "json_get",
}
APPENDS = {"rpush", "lpush", "rpushx", "lpushx", "xadd"}  # append a row: not idempotent by itself
SCHEDULE = {"create_task", "ensure_future", "run_coroutine_threadsafe", "submit", "run_in_executor"}
ROUTES = {"route", "get", "post", "put", "patch", "delete"}


def dotted(node: ast.AST) -> str:
    """'asyncio.create_task', 'r.rpush', 'store.new_client' ('' for anything else)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr}" if base else f"?.{node.attr}"
    if isinstance(node, ast.Call):
        return dotted(node.func) + "()"
    return ""


def tail(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def is_method(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Attribute)


def calls(node: ast.AST) -> Iterator[ast.Call]:
    """Calls inside ``node``, not descending into nested functions or classes."""
    todo = list(ast.iter_child_nodes(node))
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(n, ast.Call):
            yield n
        todo.extend(ast.iter_child_nodes(n))


def functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield n


def redis_write(call: ast.Call) -> bool:
    t = tail(call)
    if not is_method(call):
        return False
    if t == "set":
        return len(call.args) >= 2  # r.set(key, value): a write; event.set(): not
    return t in WRITES or t in EXPIRES


def writes(call: ast.Call, writers: set[str], imports: set[str]) -> bool:
    """A Redis write, or a call of a function of the scanned source that writes: by its bare name,
    or through a module imported by name (``store.append_idempotent``)."""
    if redis_write(call):
        return True
    f = call.func
    if isinstance(f, ast.Name):
        return f.id in writers
    return (
        isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in imports and f.attr in writers
    )


def imported_names(tree: ast.Module) -> set[str]:
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            out |= {(a.asname or a.name).split(".")[0] for a in n.names}
        elif isinstance(n, ast.ImportFrom):
            out |= {a.asname or a.name for a in n.names}
    return out


def writers(modules: Sequence[Module]) -> set[str]:
    """Names of functions that write to Redis, directly or through one another (a fixpoint)."""
    funcs = [(m, f) for m in modules for f in functions(m.tree)]
    out: set[str] = set()
    while True:
        more = {f.name for m, f in funcs if f.name not in out and any(writes(c, out, m.imports) for c in calls(f))}
        if not more:
            return out
        out |= more


def loop_per_request(modules: Sequence[Module]) -> bool:
    """A new event loop per request: Flask runs each ``async def`` view in asyncio.run, and a
    sync view (any framework's) may do the same itself -- ``asyncio.run(...)`` in the view, or in
    a helper of the module it calls (``def run(coro): return asyncio.run(coro)``)."""
    for m in modules:
        flask = "flask" in m.imports or "from flask" in m.text
        views = [
            f for f in functions(m.tree) if any(isinstance(d, ast.Call) and tail(d) in ROUTES for d in f.decorator_list)
        ]
        if flask and any(isinstance(f, ast.AsyncFunctionDef) for f in views):
            return True
        runners = {f.name for f in functions(m.tree) if any(_new_loop(c) for c in calls(f))}
        for f in views:
            if any(_new_loop(c) or (isinstance(c.func, ast.Name) and c.func.id in runners) for c in calls(f)):
                return True
    return False


def _new_loop(call: ast.Call) -> bool:
    """``asyncio.run(...)`` or ``...run_until_complete(...)``: a coroutine run on a loop of its own."""
    return dotted(call.func) == "asyncio.run" or tail(call) == "run_until_complete"


def module_names(tree: ast.Module) -> set[str]:
    """Names assigned at module level (including inside module-level if/try blocks)."""
    top: set[str] = set()
    todo: list[ast.AST] = list(tree.body)
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.Assign, ast.AnnAssign)):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            top |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(n, (ast.If, ast.Try, ast.With)):
            todo.extend(n.body + getattr(n, "orelse", []) + getattr(n, "finalbody", []))
    return top


def pipelines(f: ast.AST) -> set[str]:
    """Names bound to a pipeline/transaction in a function (``with r.pipeline() as p``, ``p = r.pipeline()``)."""
    out = set()
    for n in ast.walk(f):
        if isinstance(n, (ast.With, ast.AsyncWith)):
            for item in n.items:
                if (
                    isinstance(item.context_expr, ast.Call)
                    and tail(item.context_expr) == "pipeline"
                    and isinstance(item.optional_vars, ast.Name)
                ):
                    out.add(item.optional_vars.id)
        elif isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and tail(n.value) == "pipeline":
            out |= {t.id for t in n.targets if isinstance(t, ast.Name)}
    return out


def receiver(call: ast.Call) -> str:
    f = call.func
    return f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else ""


def parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def names_used(f: ast.AST) -> dict[str, int]:
    """How often each name is read in ``f``."""
    out: dict[str, int] = {}
    for n in ast.walk(f):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            out[n.id] = out.get(n.id, 0) + 1
    return out
