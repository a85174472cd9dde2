"""A streamed turn stored after the token loop: a client gone mid-stream means no save."""

from __future__ import annotations

import ast

from lab.suspects import Module, Source, Suspect, _facts, register

_SAVE_WORDS = ("save", "store", "persist")


def _yields(node: ast.AST) -> bool:
    return any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(node))


def _is_save(stmt: ast.stmt, src: Source, m: Module) -> ast.Call | None:
    for c in _facts.calls(stmt):
        t = _facts.tail(c).lower()
        if (
            _facts.writes(c, src.writers, m.imports)
            or any(w in t for w in _SAVE_WORDS)
            or _facts.dotted(c.func) == "asyncio.run"
        ):
            return c
    return None


def _after_loop(body: list[ast.stmt], src: Source, m: Module) -> list[tuple[ast.stmt, ast.Call]]:
    """Saves in ``body`` after a loop that yields (also inside try/with blocks of the body)."""
    out = []
    looped = False
    for stmt in body:
        if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)) and _yields(stmt):
            looped = True
        elif looped and (c := _is_save(stmt, src, m)) is not None:
            out.append((stmt, c))
        if isinstance(stmt, (ast.Try, ast.With, ast.AsyncWith)):
            out += _after_loop(stmt.body, src, m)
    return out


@register(
    "stream_end_save",
    diagnoses=("saved_at_stream_end",),
    mechanism="a streamed turn stored only after the stream's last token",
)
def check(src: Source) -> list[Suspect]:
    out = []
    for m in src.modules:
        for f in _facts.functions(m.tree):
            if not _yields(f):
                continue
            for _stmt, call in _after_loop(f.body, src, m):
                out.append(
                    src.suspect(
                        "stream_end_save",
                        m,
                        call,
                        f"`{ast.unparse(call)[:50]}` comes after the generator's token loop: when the client "
                        "leaves mid-stream the generator is closed at its next yield and this never runs, "
                        "though the first token already acknowledged the turn",
                    )
                )
    return out
