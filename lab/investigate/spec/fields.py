"""The spec's field readers: each error names the field, the value and the expected form."""

from __future__ import annotations

import re
from typing import Any

from lab.common.errors import UsageError

JSON_PATH = re.compile(r"^\$(\.[A-Za-z_][A-Za-z0-9_-]*)*$")  # a JSON path: $ or $.a.b
URL_PATH = re.compile(r"^/\S*$")  # a URL path


def bad(field_name: str, value: object, expected: str) -> UsageError:
    return UsageError(
        f"target spec: {field_name} = {value!r} is not valid; expected {expected}",
        "fix the spec (format: docs/investigate.md, 'The target spec (TOML)')",
    )


def table(data: dict[str, Any], name: str, required: bool = True) -> dict[str, Any]:
    if name not in data:
        if required:
            raise bad(name, None, f"a [{name}] table")
        return {}
    value = data[name]
    if not isinstance(value, dict):
        raise bad(name, value, f"a [{name}] table")
    return value


def text(
    t: dict[str, Any],
    section: str,
    key: str,
    default: str | None = None,
    required: bool = False,
    pattern: re.Pattern[str] | None = None,
    expected: str = "a string",
) -> Any:
    if key not in t:
        if required:
            raise bad(f"{section}.{key}", None, expected + " (required)")
        return default
    v = t[key]
    if not isinstance(v, str) or (pattern is not None and not pattern.match(v)):
        raise bad(f"{section}.{key}", v, expected)
    return v


def number(t: dict[str, Any], section: str, key: str, default: float, lo: float, hi: float) -> float:
    v = t.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi:
        raise bad(f"{section}.{key}", v, f"a number in [{lo:g}, {hi:g}]")
    return float(v)


def headers(t: dict[str, Any], section: str, key: str) -> dict[str, str]:
    """A table of HTTP header names and their string values ({} where left out)."""
    h = t.get(key, {})
    if not isinstance(h, dict) or not all(
        isinstance(k, str) and re.fullmatch(r"[A-Za-z0-9-]+", k) and isinstance(v, str) for k, v in h.items()
    ):
        raise bad(f"{section}.{key}", h, 'a table of header names and string values, e.g. { "HX-Request" = "true" }')
    return dict(h)
