"""The window of vulnerability: a sweep's points (value, k lost of n judged, Wilson 95 %) and the
window told in words. Pure functions: the command runs the trials, this says what they show.

The edge of a window is given as the interval between two values tried -- the last that lost
and the first past it that did not -- never finer than the sweep's grid: "within 30-100 ms of
the answer" says what was measured, a single number would not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lab.model.checker import Result
from lab.model.stats import wilson

if TYPE_CHECKING:
    from lab.plan.sweeps import Sweep


def lost(result: Result) -> bool:
    """Did the trial lose data the user had seen acknowledged? A turn missing (a lost update
    included), or the whole conversation gone (expired, amnesia)."""
    return bool(result.lost_turns) or result.expired or (result.amnesia and not result.page_failed)


@dataclass
class Point:
    value: int
    k: int = 0  # judged trials that lost data
    n: int = 0  # judged trials
    unknown: int = 0
    replay: list[str] | None = None  # replay lines of the first failing trials
    why_unknown: dict[str, int] | None = None  # the reasons trials were unknown, counted

    def add(self, result: Result, hit: bool, replay: str, why: list[str]) -> None:
        """One trial: unknown (its reasons counted), else judged -- a hit keeps its replay line
        (the first three)."""
        if result.validity == "unknown":
            self.unknown += 1
            reason = "; ".join((result.reasons + why)[:2]) or "unknown"
            self.why_unknown = {**(self.why_unknown or {}), reason: (self.why_unknown or {}).get(reason, 0) + 1}
            return
        self.n += 1
        if hit:
            self.k += 1
            self.replay = (self.replay or []) + ([replay] if len(self.replay or []) < 3 else [])

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.k, self.n)

    @property
    def width(self) -> float:
        lo, hi = self.interval
        return hi - lo

    def as_json(self) -> dict[str, Any]:
        lo, hi = self.interval
        return {
            "value": self.value,
            "k": self.k,
            "n": self.n,
            "unknown": self.unknown,
            "rate": round(self.k / self.n, 4) if self.n else None,
            "low": round(lo, 4),
            "high": round(hi, 4),
            "replay": self.replay or [],
            "why_unknown": self.why_unknown or {},
        }


def _edge(a: int, b: int, unit: str) -> str:
    return f"{a}-{b} {unit}" if unit != "% of the TTL" else f"{a}-{b} %"


def window_edge(points: list[Point]) -> tuple[str, int, int] | None:
    """Where the window ends, from the judged points: ("early", a, b) -- lost up to a, not from
    b on -- or ("late", a, b) -- not up to a, lost from b on; None when there is no single edge
    (no loss, loss everywhere, loss here and there, nothing judged)."""
    judged = [p for p in sorted(points, key=lambda p: p.value) if p.n]
    flags = [bool(p.k) for p in judged]
    if not judged or all(flags) or not any(flags):
        return None
    cut = flags.index(not flags[0])  # the first point unlike the first one
    if any(f == flags[0] for f in flags[cut:]):
        return None
    return ("early" if flags[0] else "late"), judged[cut - 1].value, judged[cut].value


def window_words(points: list[Point], unit: str, early: str, late: str, every: str) -> str:
    """The window in one sentence, from the judged points only:

    - nothing judged: "unknown";
    - no loss anywhere: "no loss at any value tried", with the largest 95 % upper bound;
    - loss at every value: ``every``;
    - loss at the small values and none past an edge: ``early`` with the edge's interval (and
      the reverse: ``late``);
    - anything else (loss here and there): the values that lost, with no window claimed.
    """
    judged = [p for p in sorted(points, key=lambda p: p.value) if p.n]
    if not judged:
        return "unknown: no value's trials could be judged"
    if len(points) == 1:  # a point's replay: a rate, no window
        (p,) = judged
        return f"{p.k}/{p.n} at {p.value} (one value: a rate, not a window)"
    losing = [p for p in judged if p.k]
    if not losing:
        worst = max(p.interval[1] for p in judged)
        return f"no loss at any value tried ({judged[0].value}-{judged[-1].value}; 95 % upper bound {worst:.0%})"
    if len(losing) == len(judged):
        return every.format(lo=judged[0].value, hi=judged[-1].value)
    edge = window_edge(judged)
    if edge is None:
        return "loss at " + ", ".join(f"{p.value} ({p.k}/{p.n})" for p in losing) + ": no single window"
    kind, a, b = edge
    pa, pb = (next(p for p in judged if p.value == v) for v in (a, b))
    if kind == "early":
        return early.format(edge=_edge(a, b, unit)) + f" (lost at {a}: {pa.k}/{pa.n}; not at {b} or past it)"
    return late.format(edge=_edge(a, b, unit)) + f" (not at {a} or below; lost at {b}: {pb.k}/{pb.n})"


def results(
    run_id: str,
    sweep: "Sweep",
    seed: int,
    fault: str,
    profiles: dict[str, str],
    points: dict[str, list[Point]],
    window: dict[str, str],
    edge: tuple[str, int, int] | None,
    trials: int,
    seconds: float,
    interrupted: bool,
    exit_code: int,
    reason: str,
    **extra: Any,
) -> dict[str, Any]:
    """A sweep's results.json, the same for `lab window` on the built-in service and on an app:
    one curve of points per profile (or kind of anomaly), the window in words, the edge."""
    curves = {name: [p.as_json() for p in pts] for name, pts in points.items()}
    return {
        "run_id": run_id,
        "kind": "window",
        **extra,
        "sweep": sweep.name,
        "axis": sweep.what,
        "unit": sweep.unit,
        "log_x": sweep.log_x,
        "seed": seed,
        "fault": fault,
        "profiles": profiles,
        "curves": curves,
        "window": window,
        # The edge: lost up to a, not from b on ("early"), or the reverse ("late").
        "edge": {"kind": edge[0], "between": [edge[1], edge[2]]} if edge else None,
        "trials": trials,
        "seconds": round(seconds, 1),
        "interrupted": interrupted,
        "exit": {"code": exit_code, "reason": reason},
    }
