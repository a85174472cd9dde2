"""The history read, changed in Python and written back whole: a concurrent write in between is lost."""

from __future__ import annotations

import ast

from lab.suspects import Source, Suspect, _facts, register

GETS = {"get", "json_get", "hgetall"}  # a whole value read (a document, a hash)
PUTS = {"set", "json_set", "hset", "hmset", "setex", "psetex"}


def _key(call: ast.Call) -> str | None:
    return ast.dump(call.args[0]) if call.args else None


def _readers(src: Source) -> set[str]:
    """Functions that return a whole value read by a key they are given (``_document(key)``)."""
    out = set()
    for m in src.modules:
        for f in _facts.functions(m.tree):
            params = {a.arg for a in f.args.args}
            if any(
                _facts.is_method(c)
                and _facts.tail(c) in GETS
                and c.args
                and isinstance(c.args[0], ast.Name)
                and c.args[0].id in params
                for c in _facts.calls(f)
            ):
                out.add(f.name)
    return out


@register(
    "read_modify_write",
    diagnoses=("lost_update",),
    mechanism="the history read, changed in Python and written back whole (GET ... SET, no WATCH or script)",
)
def check(src: Source) -> list[Suspect]:
    readers = _readers(src)
    out = []
    for m in src.modules:
        for f in _facts.functions(m.tree):
            seq = sorted(_facts.calls(f), key=lambda c: (c.lineno, c.col_offset))
            if any(_facts.tail(c) == "watch" for c in seq):
                continue  # optimistic locking: WATCH ... MULTI/EXEC retries on a concurrent change
            piped = _facts.pipelines(f)
            reads = [
                c
                for c in seq
                if (_facts.is_method(c) and _facts.tail(c) in GETS and _facts.receiver(c) not in piped)
                or (isinstance(c.func, ast.Name) and c.func.id in readers)
            ]
            for put in seq:
                # r.set(key, value) / r.hset(key, mapping=...): a whole value written (Event.set()
                # and set.add have no key argument)
                if (
                    not (
                        _facts.is_method(put)
                        and _facts.tail(put) in PUTS
                        and put.args
                        and (len(put.args) >= 2 or put.keywords)
                    )
                    or _facts.receiver(put) in piped
                ):
                    continue
                # the same key expression: a GET's key, or any argument of a reader's call
                got = next(
                    (
                        r
                        for r in reads
                        if r.lineno <= put.lineno
                        and r is not put
                        and _key(put) in ([_key(r)] if _facts.is_method(r) else [ast.dump(a) for a in r.args])
                    ),
                    None,
                )
                if got is not None:
                    out.append(
                        src.suspect(
                            "read_modify_write",
                            m,
                            put,
                            f"writes back the value read on line {got.lineno}: a write by another request "
                            "in between (a second tab) is overwritten",
                        )
                    )
    return out
