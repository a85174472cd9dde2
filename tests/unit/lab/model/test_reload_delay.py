"""A window point on a black box counts only if its reload left at the delay planned."""

from __future__ import annotations

from lab.model.history import Trial


def _t(ms: float | None) -> Trial:
    t = Trial("t", refresh="after_ack")
    t.refresh_delay_ms = ms
    return t


def test_a_reload_at_the_planned_delay_counts() -> None:
    assert _t(300.0).reload_delay_problem(300) is None
    assert _t(449.0).reload_delay_problem(300) is None
    assert _t(90.0).reload_delay_problem(40) is None  # 50 ms of slack at least


def test_an_early_late_or_unmeasured_reload_is_named() -> None:
    assert "left 12.0 ms after the answer, planned 300 ms" in (_t(12.0).reload_delay_problem(300) or "")
    assert "accepted 300-450 ms" in (_t(600.0).reload_delay_problem(300) or "")
    assert "left None ms" in (_t(None).reload_delay_problem(300) or "")
