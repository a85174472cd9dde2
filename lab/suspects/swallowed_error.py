"""A failed write logged and forgotten: the request still answers 2xx."""

from __future__ import annotations

import ast

from lab.suspects import Module, Source, Suspect, _facts, register

BROAD = {"Exception", "BaseException", "RedisError", "ConnectionError", "TimeoutError", "OSError"}
_LOGS = {"debug", "info", "warning", "warn", "error", "exception", "critical", "log", "print"}


def _raises(body: list[ast.stmt]) -> bool:
    return any(isinstance(n, ast.Raise) for s in body for n in ast.walk(s))


def _tuples(m: Module) -> dict[str, set[str]]:
    """The module's own names for a tuple of exceptions (``STORAGE_ERRORS = (redis.RedisError,
    OSError)``, caught as ``except STORAGE_ERRORS``): each name's members, by their last part."""
    out = {}
    for s in m.tree.body:
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
            if isinstance(s.value, ast.Tuple) and all(isinstance(e, ast.Name | ast.Attribute) for e in s.value.elts):
                out[s.targets[0].id] = {ast.unparse(e).split(".")[-1] for e in s.value.elts}
    return out


def _handlers(m: Module, src: Source) -> list[ast.ExceptHandler]:
    """``except`` blocks around a write that neither raise nor hand the error on (to a call that
    takes the exception) nor return."""
    out, tuples = [], _tuples(m)
    for t in ast.walk(m.tree):
        if not isinstance(t, ast.Try):
            continue
        if not any(_facts.writes(c, src.writers, m.imports) for s in t.body for c in _facts.calls(s)):
            continue
        for h in t.handlers:
            names = {
                x.split(".")[-1] for x in (ast.unparse(h.type).strip("()").split(", ") if h.type else ["BaseException"])
            }
            names |= {e for n in names for e in tuples.get(n, ())}
            handed_on = h.name is not None and any(
                isinstance(a, ast.Name) and a.id == h.name
                for s in h.body
                for c in _facts.calls(s)
                for a in c.args
                if _facts.tail(c) not in _LOGS
            )
            returns = any(isinstance(n, ast.Return) for s in h.body for n in ast.walk(s))
            if names & BROAD and not _raises(h.body) and not handed_on and not returns:
                out.append(h)
    return out


def _error_callbacks(m: Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Error hooks (a parameter annotated as an exception) that only log: ``on_store_error``."""
    out = []
    for f in _facts.functions(m.tree):
        anns = [ast.unparse(a.annotation) for a in f.args.args if a.annotation is not None]
        if not any(a.split(".")[-1] in ("BaseException", "Exception") for a in anns):
            continue
        logs = any(_facts.tail(c) in _LOGS for c in _facts.calls(f))
        if (
            logs
            and not _raises(f.body)
            and not any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(f))
        ):
            out.append(f)
    return out


@register(
    "swallowed_error",
    diagnoses=("acked_while_unreachable", "acked_write_refused"),
    mechanism="a failed store step logged and ignored, the request answered 2xx",
)
def check(src: Source) -> list[Suspect]:
    out = []
    for m in src.modules:
        out += [
            src.suspect(
                "swallowed_error", m, h, "the write's error is caught and dropped here: the answer still says it worked"
            )
            for h in _handlers(m, src)
        ]
        out += [
            src.suspect(
                "swallowed_error",
                m,
                f,
                f"`{f.name}` receives the store's error and only logs "
                "it: nothing tells the user the turn was not saved",
            )
            for f in _error_callbacks(m)
        ]
    return out
