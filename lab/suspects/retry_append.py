"""A non-idempotent append under a client that retries: a lost reply + a retry = stored twice."""

from __future__ import annotations

import ast

from lab.suspects import Module, Source, Suspect, _facts, register
from lab.suspects.module_client import CONSTRUCTORS


def _int(node: ast.AST | None) -> int | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, int) else None


def _policies(m: Module) -> list[tuple[int, str]]:
    """(line, what) of each retry policy: ``Retry(backoff, N>0)``, ``retry_on_timeout=True``,
    ``retry_on_error=[...]``, or a redis-py client made without ``retry=`` (redis-py 8 retries
    10 times by default; 6.x/7.x 3 times)."""
    out = []
    for n in ast.walk(m.tree):
        if not isinstance(n, ast.Call):
            continue
        t = _facts.tail(n)
        kws = {k.arg: k.value for k in n.keywords}
        if t == "Retry":
            count = _int(n.args[1]) if len(n.args) > 1 else _int(kws.get("retries"))
            if count is None or count > 0:
                out.append((n.lineno, f"Retry(..., {count if count is not None else '?'})"))
        elif t in CONSTRUCTORS and ("redis" in m.imports or m.async_redis):
            if kws.get("retry_on_timeout") is not None and getattr(kws["retry_on_timeout"], "value", None) is True:
                out.append((n.lineno, "retry_on_timeout=True"))
            elif "retry_on_error" in kws:
                out.append((n.lineno, "retry_on_error=..."))
            elif "retry" not in kws and None not in kws:
                out.append((n.lineno, "no retry= (redis-py's default retries)"))
    return out


@register(
    "retry_append",
    diagnoses=("duplicates_after_drop",),
    mechanism="a non-idempotent append sent by a client that retries on connection errors",
)
def check(src: Source) -> list[Suspect]:
    policies = [(m, line, what) for m in src.modules for line, what in _policies(m)]
    if not policies:
        return []
    pm, pline, pwhat = policies[0]
    out = []
    for m in src.modules:
        for n in ast.walk(m.tree):
            if isinstance(n, ast.Call) and _facts.is_method(n) and _facts.tail(n) in _facts.APPENDS:
                out.append(
                    src.suspect(
                        "retry_append",
                        m,
                        n,
                        f"{_facts.tail(n).upper()} has no message id to absorb a repeat, and {pm.rel}:{pline} "
                        f"retries ({pwhat}): a reply lost after Redis applied it makes the retry append again",
                    )
                )
    return out
