"""The shape of the record that holds a reply: what an app stores around a reply's text -- its
fields and their flags -- with the text itself, ids, times and numbers left out. One piece of
code stores every whole reply in one shape; a reply it marked (interrupted, partial, an error
flag or status, a note appended to the text) has another. Pure functions.

A value is searched as JSON first (the innermost object holding the text in a string; a
document of the whole conversation holds each message in its own object), else as text
(a raw row, "assistant: ..."). A hash's or a stream's field/value pairs are read as an object."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

TEXT = "<text>"
SHORT = 24  # a string this short with no digit is a flag or a role, not an id or a time
PAIRS = ("HSET", "HMSET", "HSETNX", "XADD")
_DIGITS = re.compile(r"\d+")


def _mask(s: str) -> str:
    return _DIGITS.sub("0", s)


def _value(v: Any) -> Any:
    """A field's value as the shape keeps it: flags and short words as they are, the rest as
    their kind (an id, a time, a number, a nested part)."""
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, str):
        return v if len(v) <= SHORT and not any(c.isdigit() for c in v) else "<str>"
    if isinstance(v, (int, float)):
        return "<num>"
    return "<list>" if isinstance(v, list) else "<obj>"


def _holds(s: str, text: str, others: Sequence[str]) -> bool:
    """``s`` holds ``text`` and not as part of another reply that holds it (a reply cut short
    is the start of the whole one: a row of the whole one is not the cut one's)."""
    return text in s and not any(text in o and o != text and o in s for o in others)


def _holder(doc: Any, text: str, others: Sequence[str] = ()) -> str | None:
    """The shape of the innermost object in ``doc`` with a string field holding ``text``."""
    if isinstance(doc, dict):
        for v in doc.values():
            if isinstance(v, (dict, list)) and (inner := _holder(v, text, others)) is not None:
                return inner
        for k, v in doc.items():
            if isinstance(v, str) and _holds(v, text, others):
                fields = {str(f): _value(x) for f, x in doc.items() if f != k}
                fields[str(k)] = _mask(v.strip().replace(text, TEXT))
                return json.dumps(fields, sort_keys=True)
    elif isinstance(doc, list):
        for v in doc:
            if (inner := _holder(v, text, others)) is not None:
                return inner
        for v in doc:
            if isinstance(v, str) and _holds(v, text, others):
                return json.dumps([_mask(v.strip().replace(text, TEXT))])
    return None


def _pairs(values: Sequence[bytes]) -> dict[str, str]:
    out: dict[str, str] = {}
    for i in range(0, len(values) - 1, 2):
        out[values[i].decode(errors="replace")] = values[i + 1].decode(errors="replace")
    return out


def shape(cmd: str, values: Sequence[bytes], text: str, others: Sequence[str] = ()) -> str | None:
    """The shape of the record that holds ``text`` in a write's values (the arguments after the
    key), not inside one of ``others`` (the other replies); None: no value holds it. XADD's
    values start after its id (``*`` or ``n-n``)."""
    want = text.strip()
    others = [o.strip() for o in others]
    if len(want) < 2:
        return None
    if cmd in PAIRS:
        start = next((i + 1 for i, v in enumerate(values) if v == b"*" or re.fullmatch(rb"\d+-\d+", v)), 0)
        return _holder(_pairs(values[start:] if cmd == "XADD" else values), want, others)
    for v in values:
        s = v.decode(errors="replace")
        try:
            doc = json.loads(s)
        except ValueError:
            doc = s  # a raw row ("assistant: ...")
        if isinstance(doc, (dict, list)) and (found := _holder(doc, want, others)) is not None:
            return found
        if isinstance(doc, str) and _holds(doc, want, others):
            return json.dumps([_mask(doc.strip().replace(want, TEXT))])
    return None
