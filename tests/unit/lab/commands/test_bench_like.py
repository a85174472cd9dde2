"""`lab bench`'s like-with-like lines (lab.commands.bench_like.text): both sides side by side, the
ratios, each side's phases, and what of a black-box trial's own time is its waits where a white
box is told -- or, where a side judged nothing, that nothing was measured."""

from __future__ import annotations

from typing import Any

from lab.commands.bench_like import text


def _side(own_s: float, phases_ms: dict[str, float]) -> dict[str, Any]:
    return {
        "trials": 120,
        "judged": 120,
        "per_trial_s": own_s,
        "wall_per_trial_s": own_s / 7,
        "cpu_per_trial_s": 0.4,
        "phases_ms": phases_ms,
    }


def _figures(inv_phases: dict[str, float]) -> dict[str, Any]:
    return {
        "cell": "correct|none|settled|t5",
        "target": "examples/chat-service.toml",
        "concurrency": 8,
        "chaos": _side(1.4, {"open": 400.0, "send": 300.0, "quiescence": 0.4}),
        "investigate": {**_side(1.6, inv_phases), "contract_s": 0.8},
        "rounds": [{}] * 4,
        "ratio": {"per_trial_s": 1.14, "wall_per_trial_s": 0.96, "cpu_per_trial_s": 0.94},
    }


def test_both_sides_their_ratios_phases_and_the_black_boxs_waits() -> None:
    lines = text(_figures({"open": 150.0, "send": 400.0, "ttl": 310.4, "settle": 478.6})).splitlines()
    assert lines[0].startswith("investigate against lab chaos, same experiment (correct|none|settled|t5;")
    assert lines[2].split() == ["lab", "chaos", "1.400", "0.200", "0.400", "120/120"]
    assert "investigate / chaos: own x1.14, wall x0.96, CPU x0.94 (medians of 4 rounds' ratios)" in lines[4]
    assert lines[-3] == "  lab chaos phases (ms a trial): open 400, send 300"  # under 1 ms: left out
    assert lines[-1] == (
        "  investigate's own time includes its waits: the settled read 479 ms and the TTL reads 310 ms a "
        "trial, where lab chaos is told by its backend's events (the next trial starts during the settled read)"
    )


def test_no_waits_no_line_and_no_judged_trial_no_figures() -> None:
    assert "its waits" not in text(_figures({"open": 150.0}))
    assert (
        text({**_figures({}), "ratio": None})
        == "investigate against lab chaos: not measured (a side had no judged trial)"
    )
