"""The variables a window sweep (lab window) sets on a cell, beyond its fault's parameters and
its turns: each acts at one refresh point, in the driver, as a user would.

- ``refresh_delay_ms`` (after_ack): the refresh comes this long after the answer arrived;
- ``tab_gap_ms`` (two_tabs): the second tab sends this long after the first;
- ``fault_onset_ms`` (any refresh point, a one-send fault): the fault comes on this long after
  the fault turn's send began, not before it.

(The conversation's age against its TTL is ttl_elapse's own ``span_pct``; its length is the
cell's ``turns``.)
"""

from __future__ import annotations

from lab.common.errors import UsageError

KNOBS: dict[str, tuple[str, int]] = {  # name -> (the refresh point it acts at, its largest value)
    "refresh_delay_ms": ("after_ack", 60_000),
    "tab_gap_ms": ("two_tabs", 60_000),
    "fault_onset_ms": ("", 60_000),  # "": any refresh point (the fault must be a one-send one)
}


def parse_knob(text: str) -> tuple[str, int]:
    """'refresh_delay_ms=30' -> ("refresh_delay_ms", 30), naming the valid knobs when wrong."""
    name, eq, value = text.partition("=")
    name = name.strip()
    if name not in KNOBS or not eq:
        raise UsageError(f"knob {text!r}: expected NAME=MS", f"valid names: {', '.join(KNOBS)}")
    try:
        return name, int(value)
    except ValueError:
        raise UsageError(f"knob {name}={value!r}: not a whole number of milliseconds") from None


def check_knobs(knobs: tuple[tuple[str, int], ...], refresh: str) -> None:
    for name, value in knobs:
        if name not in KNOBS:
            raise UsageError(f"unknown knob {name!r}", f"valid: {', '.join(KNOBS)}")
        point, top = KNOBS[name]
        if point and refresh != point:
            raise UsageError(f"knob {name} acts at the refresh point {point}, not {refresh}")
        if not 0 <= value <= top:
            raise UsageError(f"{name}={value} is out of range [0, {top}]")
