"""The append and its EXPIRE as two commands: a request failing between them skips the TTL."""

from __future__ import annotations


from lab.suspects import Source, Suspect, _facts, register


@register(
    "ttl_two_commands",
    diagnoses=("ttl_skipped_on_error",),
    mechanism="the append and its TTL renewal sent as two commands (no MULTI, no script)",
)
def check(src: Source) -> list[Suspect]:
    out = []
    for m in src.modules:
        for f in _facts.functions(m.tree):
            piped = _facts.pipelines(f)
            seq = sorted(
                (c for c in _facts.calls(f) if _facts.receiver(c) not in piped), key=lambda c: (c.lineno, c.col_offset)
            )
            first_write = next(
                (c for c in seq if _facts.tail(c) not in _facts.EXPIRES and _facts.writes(c, src.writers, m.imports)),
                None,
            )
            if first_write is None:
                continue
            for c in seq:
                if _facts.tail(c) in _facts.EXPIRES and _facts.is_method(c) and c.lineno > first_write.lineno:
                    out.append(
                        src.suspect(
                            "ttl_two_commands",
                            m,
                            c,
                            f"the write on line {first_write.lineno} and this {_facts.tail(c).upper()} are two "
                            "round trips: a request that fails after the first (reply lost, timeout) keeps "
                            "the rows without renewing the TTL",
                        )
                    )
    return out
