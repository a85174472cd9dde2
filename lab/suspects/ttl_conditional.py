"""EXPIRE under a condition: a write that skips the branch leaves the TTL as it was, or none --
and EXPIRE ... NX, Redis's own condition (only a key with no TTL gets one: set once)."""

from __future__ import annotations

import ast

from lab.suspects import Source, Suspect, _facts, register


@register(
    "ttl_conditional",
    diagnoses=("ttl_not_renewed", "no_ttl"),
    mechanism="the TTL set only on some writes (EXPIRE under an if, or EXPIRE ... NX)",
)
def check(src: Source) -> list[Suspect]:
    out = []
    for m in src.modules:
        up = _facts.parents(m.tree)
        for n in ast.walk(m.tree):
            if not (isinstance(n, ast.Call) and _facts.is_method(n) and _facts.tail(n) in _facts.EXPIRES):
                continue
            if _nx(n):
                out.append(
                    src.suspect(
                        "ttl_conditional",
                        m,
                        n,
                        f"{_facts.tail(n).upper()} ... NX sets a TTL only on a key that has none: the first "
                        "write's stays, and the conversation runs out a fixed time after it however active",
                    )
                )
                continue
            node: ast.AST = n
            while node in up and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
                parent = up[node]
                if isinstance(parent, ast.If) and node is not parent.test:
                    out.append(
                        src.suspect(
                            "ttl_conditional",
                            m,
                            n,
                            f"{_facts.tail(n).upper()} only when `{ast.unparse(parent.test)[:60]}`: the other "
                            "writes leave the TTL where it was (set once: it runs out however active the "
                            "conversation) or never set",
                        )
                    )
                    break
                node = parent
    return out


def _nx(call: ast.Call) -> bool:
    """nx=<anything but False/None> (redis-py), or an "NX" argument (a command sent raw)."""
    for kw in call.keywords:
        if kw.arg == "nx" and not (isinstance(kw.value, ast.Constant) and kw.value.value in (False, None)):
            return True
    return any(isinstance(a, ast.Constant) and str(a.value).upper() == "NX" for a in call.args)
