"""The stored conversation trimmed: the oldest turns deleted, not only left out of a prompt."""

from __future__ import annotations

import ast

from lab.suspects import Source, Suspect, _facts, register

TRIMS = {"ltrim", "xtrim"}


@register(
    "history_trim",
    diagnoses=("history_capped",),
    mechanism="the stored history trimmed to a cap (LTRIM/XTRIM, XADD maxlen)",
)
def check(src: Source) -> list[Suspect]:
    out = []
    for m in src.modules:
        for n in ast.walk(m.tree):
            if not (isinstance(n, ast.Call) and _facts.is_method(n)):
                continue
            t = _facts.tail(n)
            if t in TRIMS or (t == "xadd" and any(k.arg == "maxlen" for k in n.keywords)):
                out.append(
                    src.suspect(
                        "history_trim",
                        m,
                        n,
                        f"{t.upper()} on the stored history: turns beyond the cap are deleted for good",
                    )
                )
    return out
