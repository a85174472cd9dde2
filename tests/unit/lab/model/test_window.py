"""The window in words: a pure function of the judged points, never finer than the grid."""

from __future__ import annotations

from lab.model.window import Point, window_words
from lab.plan.sweeps import SWEEPS

DELAY = SWEEPS["refresh_delay_ms"]
AGE = SWEEPS["age_ttl_pct"]


def _words(points: list[Point], sweep=DELAY) -> str:  # type: ignore[no-untyped-def]
    return window_words(points, sweep.unit, sweep.early, sweep.late, sweep.every)


def test_loss_at_small_delays_only_gives_the_edge_between_two_values_tried() -> None:
    pts = [Point(0, 5, 5), Point(10, 5, 5), Point(30, 2, 8), Point(100, 0, 5), Point(300, 0, 5)]
    assert _words(pts) == (
        "loses the turn when the refresh comes within 30-100 ms of the answer (lost at 30: 2/8; not at 100 or past it)"
    )


def test_loss_at_every_delay_says_no_wait_saves_it() -> None:
    assert _words([Point(0, 5, 5), Point(1000, 4, 5)]) == (
        "loses the turn at every delay tried (0-1000 ms): no wait saves it"
    )


def test_loss_past_an_age_is_a_late_window() -> None:
    pts = [Point(50, 0, 5), Point(85, 0, 5), Point(115, 5, 5), Point(200, 5, 5)]
    assert _words(pts, AGE) == (
        "loses the conversation once it is older than 85-115 % of its TTL (not at 85 or below; lost at 115: 5/5)"
    )


def test_no_loss_gives_the_largest_upper_bound() -> None:
    assert _words([Point(0, 0, 5), Point(10, 0, 15)]) == "no loss at any value tried (0-10; 95 % upper bound 43%)"


def test_unjudged_points_are_left_out_and_none_judged_is_unknown() -> None:
    assert _words([Point(0, unknown=5), Point(10, unknown=3)]).startswith("unknown")
    pts = [Point(0, 5, 5), Point(10, unknown=5), Point(30, 0, 5)]
    assert "within 0-30 ms" in _words(pts)


def test_loss_here_and_there_claims_no_window() -> None:
    pts = [Point(0, 0, 5), Point(10, 3, 5), Point(30, 0, 5), Point(100, 2, 5)]
    assert _words(pts) == "loss at 10 (3/5), 100 (2/5): no single window"


def test_a_point_reports_its_wilson_interval() -> None:
    j = Point(30, 0, 5).as_json()
    assert (j["k"], j["n"], j["low"], j["rate"]) == (0, 5, 0.0, 0.0) and 0.43 < j["high"] < 0.44


def test_the_edge_is_the_pair_of_values_where_the_curve_turns() -> None:
    from lab.model.window import window_edge

    assert window_edge([Point(0, 5, 5), Point(30, 1, 5), Point(100, 0, 5)]) == ("early", 30, 100)
    assert window_edge([Point(85, 0, 5), Point(115, 5, 5), Point(200, 5, 5)]) == ("late", 85, 115)
    assert window_edge([Point(0, 5, 5), Point(30, 0, 5), Point(100, 2, 5)]) is None
    assert window_edge([Point(0, 5, 5), Point(30, 5, 5)]) is None
    assert window_edge([Point(0, 0, 5), Point(30, unknown=5)]) is None


def test_one_value_is_a_rate_not_a_window() -> None:
    assert _words([Point(100, 3, 5)]) == "3/5 at 100 (one value: a rate, not a window)"
