"""Window sweeps (lab window): one variable varied, everything else fixed, and the cell each of
its values is run in. A sweep answers "when": how soon after the answer a refresh must come,
how old a conversation must be, how close two tabs' sends must be, for a turn to be lost.

Each sweep names its values (log-spaced where the variable spans decades), the words its window
is told in, and whether it is drawn on a log axis.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lab.common.errors import UsageError
from lab.plan.schedule import Cell


@dataclass(frozen=True)
class Sweep:
    name: str
    what: str  # the axis: "refresh delay after the answer (ms)"
    unit: str  # "ms", "% of the TTL", "turns"
    values: tuple[int, ...]
    # The window in words: {edge} is "30-100 ms"; `early` when loss comes at small values (a
    # refresh soon after the answer), `late` at large ones (an old conversation).
    early: str
    late: str
    every: str  # lost at every value tried
    make: Callable[[tuple[str, ...], int, str, dict[str, Any]], Cell]
    fault: str = "none"  # the fault the cells run under (--fault may change it, if not fixed)
    fault_params: tuple[tuple[str, Any], ...] = ()  # ... with these parameters, unless --fault
    fixed_fault: bool = False
    log_x: bool = True

    def cell(self, defects: tuple[str, ...], value: int, fault: str | None = None, **params: Any) -> Cell:
        if fault is not None and self.fixed_fault and fault != self.fault:
            raise UsageError(f"--vary {self.name} runs under the fault {self.fault}; it cannot take --fault {fault}")
        if fault is None:
            fault, params = self.fault, {**dict(self.fault_params), **params}
        return self.make(defects, value, fault, params)


def _params(params: dict[str, Any], **more: Any) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted({**params, **more}.items()))


SWEEPS: dict[str, Sweep] = {
    s.name: s
    for s in (
        Sweep(
            "refresh_delay_ms",
            "refresh delay after the answer (ms)",
            "ms",
            (0, 10, 30, 100, 300, 1000),
            early="loses the turn when the refresh comes within {edge} of the answer",
            late="loses the turn only when the refresh comes {edge} or more after the answer",
            every="loses the turn at every delay tried ({lo}-{hi} ms): no wait saves it",
            make=lambda d, v, f, p: Cell(d, f, "after_ack", 5, _params(p), knobs=(("refresh_delay_ms", v),)),
        ),
        Sweep(
            "tab_gap_ms",
            "gap between the two tabs' sends (ms)",
            "ms",
            (0, 10, 30, 100, 300, 1000),
            early="loses a turn when the second tab sends within {edge} of the first",
            late="loses a turn only when the tabs send {edge} or more apart",
            every="loses a turn at every gap tried ({lo}-{hi} ms): no pause between tabs saves it",
            make=lambda d, v, f, p: Cell(d, f, "two_tabs", 5, _params(p), knobs=(("tab_gap_ms", v),)),
            # As lab chaos's exposing cell of two tabs: 100 ms per Redis reply widens a GET..SET
            # to a window a scheduler can hit (without it, 0/3 lost at 0 ms on a quiet machine).
            fault="latency",
            fault_params=(("latency_ms", 100),),
        ),
        Sweep(
            "age_ttl_pct",
            "conversation age at the refresh (% of the TTL)",
            "% of the TTL",
            (25, 50, 75, 85, 115, 150, 200),
            early="loses the conversation while it is younger than {edge} of its TTL",
            late="loses the conversation once it is older than {edge} of its TTL",
            every="loses the conversation at every age tried ({lo}-{hi} % of the TTL)",
            # Three turns and an 8 s TTL: the youngest age (2 s) still fits the turns' overhead, and
            # the refresh, page load, quiescence and final read after the age fit in its slack
            # (ttl_elapse.slack_pct: 20 %, 1.6 s; 10 % of 4 s, then of 8 s, was overshot on a
            # loaded machine by ~100 ms).
            make=lambda d, v, f, p: Cell(d, "ttl_elapse", "settled", 3, _params({"ttl_ms": 8000, **p}, span_pct=v)),
            fault="ttl_elapse",
            fixed_fault=True,
            log_x=False,
        ),
        Sweep(
            "fault_onset_ms",
            "fault's onset after the send began (ms)",
            "ms",
            (0, 10, 30, 100, 300),
            early="loses the turn when the fault comes within {edge} of the send",
            late="loses the turn only when the fault comes {edge} or more after the send",
            every="loses the turn at every onset tried ({lo}-{hi} ms)",
            make=lambda d, v, f, p: Cell(d, f, "settled", 5, _params(p), knobs=(("fault_onset_ms", v),)),
            # Redis cut off for one send, as lab chaos's cell of swallowed errors: the onset
            # decides which of the turn's writes it meets (the user's row, the reply, none).
            fault="down",
        ),
        Sweep(
            "turns",
            "conversation length (turns)",
            "turns",
            (1, 2, 3, 5, 10, 20),
            early="loses a turn in conversations of {edge} or fewer",
            late="loses a turn once the conversation is {edge} long",
            every="loses a turn at every length tried ({lo}-{hi} turns)",
            make=lambda d, v, f, p: Cell(d, f, "settled", v, _params(p)),
        ),
    )
}


def get(name: str) -> Sweep:
    if name not in SWEEPS:
        raise UsageError(f"unknown sweep variable {name!r}", f"valid: {', '.join(SWEEPS)}")
    return SWEEPS[name]


def parse_values(text: str, sweep: Sweep) -> tuple[int, ...]:
    """'0,10,100' -> (0, 10, 100): whole numbers, ascending, each a valid cell. One value is a
    point's replay (its replay line); a window needs two or more."""
    try:
        values = tuple(sorted({int(v) for v in text.split(",") if v.strip()}))
    except ValueError:
        raise UsageError(
            f"--values {text!r}: expected whole numbers, e.g. {','.join(map(str, sweep.values))}"
        ) from None
    if not values:
        raise UsageError(f"--values {text!r}: no value given, e.g. {','.join(map(str, sweep.values))}")
    for v in values:
        sweep.cell((), v)  # each value's cell validates it (range, refresh point), naming the bad one
    return values


TOP_UP_FACTOR = 3  # a point's unknown trials are replaced up to 3 x its most trials
FIRST_TRIALS = 5  # per point and profile: 0/5 or 5/5 bounds the rate within 0.43 of the edge
MAX_TRIALS = 15
MAX_WIDTH = 0.45  # a point whose 95 % interval is wider gets more trials (a mixed rate)


def more_trials(tried: int, judged: int, width: float, first: int, max_trials: int, max_width: float) -> int:
    """Trials to add to a sweep's point: the first round; then, while fewer than that round's
    count were judged, replacements for its unknown trials (a gap or a delay the machine did not
    let them keep), up to TOP_UP_FACTOR x the most trials -- its rate counts judged trials only
    (CI 2026-12-03: 1 of 5 judged at a 0 ms tab gap); then rounds while its interval is wide."""
    if tried == 0:
        return first
    wanted, most = min(first, max_trials), TOP_UP_FACTOR * max_trials
    if judged < wanted and tried < most:
        return min(wanted - judged, most - tried)
    if width <= max_width or tried >= max_trials:
        return 0
    return min(first, max_trials - tried)
