"""A draft as a target spec file: TOML, every value with the evidence it was chosen on, and what
could not be inferred left as a commented line saying what to give."""

from __future__ import annotations

import json
import re
from typing import Any

from lab.investigate.draft.infer import Draft

ORDER = ("start", "http", "auth", "session", "transport", "chat", "stream", "history", "redis", "model")
_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(value(x) for x in v) + "]"
    return json.dumps(str(v))  # a TOML basic string: JSON's escapes are TOML's


def _key(k: str) -> str:
    return k if _BARE.match(k) else json.dumps(k)


def render(name: str, d: Draft, header: list[str]) -> str:
    out = [f"# {line}" if line else "#" for line in header]
    out += ["", f"name = {value(name)}"]
    sections = list(ORDER) + sorted(set(d.sections) - set(ORDER))
    for section in sections:
        items = d.sections.get(section, {})
        missing = {k.split(".", 1)[1]: need for k, need in d.unknown.items() if k.split(".", 1)[0] == section}
        if not items and not missing:
            continue
        out += ["", f"[{section}]"]
        tables = {k: v for k, v in items.items() if isinstance(v, dict) and k == "env"}  # [start.env]
        for k, v in items.items():
            if k in tables:
                continue
            why = d.why.get(f"{section}.{k}", "")
            out.append(f"{_key(k)} = {value(v)}" + (f"   # {why}" if why else ""))
        for k, need in missing.items():
            out.append(f"# {_key(k)} = ?   # COULD NOT INFER: {need}")
        for k, v in tables.items():
            out.append(f"[{section}.{k}]")
            out += [f"{_key(n)} = {value(x)}" for n, x in v.items()]
    return "\n".join(out) + "\n"
