"""Were two sends really concurrent? A pure function of when each request started and ended.

The two_tabs and double_submit send patterns test what an app does with two writes at once; a
trial in which the second request began only after the first had ended tested nothing of the
kind, so the runner counts it as unexercised. Two requests were in flight at once exactly when
the later start comes before the earlier end -- whichever start belongs to whichever end, so a
double submit (one id, two requests) needs no pairing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def together(starts: list[float], ends: list[float], where: str) -> dict[str, Any]:
    """{where, spread_ms (between the two starts), overlap_ms (both in flight; <= 0: never),
    in_flight_together}. ``where``: whose clock ("backend" events or the "browser")."""
    if len(starts) < 2 or len(ends) < 2:
        return {
            "where": where,
            "requests": min(len(starts), len(ends)),
            "in_flight_together": False,
            "spread_ms": None,
            "overlap_ms": None,
        }
    starts, ends = sorted(starts)[:2], sorted(ends)[:2]
    overlap_s = min(ends) - max(starts)
    return {
        "where": where,
        "requests": 2,
        "spread_ms": round((starts[1] - starts[0]) * 1000, 2),
        "overlap_ms": round(overlap_s * 1000, 2),
        "in_flight_together": overlap_s > 0,
    }


def at_backend(events: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """From the backend's own events of the sends' ids: chat.received ... chat.done."""
    evs = list(events)
    return together(
        [float(e["t"]) for e in evs if e.get("event") == "chat.received"],
        [float(e["t"]) for e in evs if e.get("event") == "chat.done"],
        "backend",
    )


def at_browser(sends: Iterable[Any]) -> dict[str, Any]:
    """From the browser's view (a black box has no backend events): invoke ... answer."""
    ss = [s for s in sends if s.t_invoke and s.t_complete is not None]
    return together([s.t_invoke for s in ss], [float(s.t_complete) for s in ss], "browser")


def problem(c: dict[str, Any]) -> str | None:
    """Why a trial's concurrent send pattern was not exercised, or None."""
    if c["in_flight_together"]:
        return None
    if c["requests"] < 2:
        return f"concurrent sends not exercised: only {c['requests']} of the 2 requests seen at the {c['where']}"
    return (
        f"concurrent sends not exercised: at the {c['where']} the second request began "
        f"{-c['overlap_ms']:.1f} ms after the first had ended"
    )


def window_problem(c: dict[str, Any], planned_ms: int | None) -> str | None:
    """Why a trial did not test what its two sends claim, or None: a window sweep's point
    (``planned_ms``, 0 included: "both at once") the gap planned; otherwise both in flight."""
    return problem(c) if planned_ms is None else gap_problem(c, planned_ms)


def gap_problem(c: dict[str, Any], planned_ms: int) -> str | None:
    """A window sweep's two tabs, the second sending ``planned_ms`` after the first: why the gap
    seen (between the two starts) is not the one planned, or None. Lower bound: a gap that
    collapsed would count its loss at the wrong point; upper: a late second send likewise."""
    if c["requests"] < 2 or c["spread_ms"] is None:
        return f"tab gap not exercised: only {c['requests']} of the 2 requests seen at the {c['where']}"
    lo, hi = planned_ms / 2, planned_ms + max(50.0, planned_ms / 2)
    if not lo <= c["spread_ms"] <= hi:
        return (
            f"tab gap not exercised: at the {c['where']} the second request began {c['spread_ms']:.1f} ms "
            f"after the first, planned {planned_ms} ms (accepted {lo:.0f}-{hi:.0f} ms)"
        )
    return None
