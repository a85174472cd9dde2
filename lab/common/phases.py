"""Where a trial's wall time goes: named phases, summed per trial.

The driver and the runner time each step of a trial with the same clock; `lab bench` prints the
mean per phase, so a change to the runner is judged by the phase it was meant to shorten."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

# In the order a trial goes through them (bench prints them in this order).
PHASES: dict[str, str] = {
    "slot": "waiting for a free browser context",
    "open": "open the page in the context (cookies cleared, history loaded)",
    "send": "type the message and press Enter, until the POST leaves",
    "ack": "the POST in flight, until its response (or first token)",
    "settle": "from the acknowledgement until the page shows the turn saved",
    "think": "the user's think time the schedule asks for (ttl_elapse)",
    "lockstep": "waiting for the group's other trials around a one-send fault",
    "trigger": "waiting for the refresh point's trigger",
    "hold": "a window sweep's pause before the refresh (lab window)",
    "refresh": "the reload (or reopen, restart) until the history is loaded",
    "read_page": "reading the rows the page shows",
    "quiescence": "until the backend finished every request of the trial",
    "model_record": "reading the stand-in model's record of the trial's calls (--model)",
    "final_read": "the final read of the conversation from Redis",
    "check": "the checker",
    "close": "ending the trial's use of the context (trace chunk)",
    "artifacts": "writing a failing trial's artifacts",
}


class Phases:
    """Seconds per phase for one trial; ``with phases("ack"): ...`` adds to a phase."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        assert name in PHASES, name
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - t0)

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds


def mean_per_trial(per_trial: list[Mapping[str, float]]) -> dict[str, float]:
    """Mean seconds per trial of each phase (phases a trial never entered count as 0)."""
    n = max(1, len(per_trial))
    return {name: sum(p.get(name, 0.0) for p in per_trial) / n for name in PHASES if any(name in p for p in per_trial)}


def breakdown_text(means: Mapping[str, float], wall_per_trial_s: float | None = None) -> str:
    """One line per phase: mean ms per trial and share of the trial's time."""
    total = sum(means.values()) or 1.0
    lines = [f"  {name:<11} {1000 * s:8.1f} ms  {100 * s / total:5.1f}%  {PHASES[name]}" for name, s in means.items()]
    lines.append(f"  {'total':<11} {1000 * total:8.1f} ms  per trial, in its browser context")
    if wall_per_trial_s is not None:
        lines.append(
            f"  {'throughput':<11} {1000 * wall_per_trial_s:8.1f} ms  of wall time per trial (contexts side by side)"
        )
    return "\n".join(lines)
