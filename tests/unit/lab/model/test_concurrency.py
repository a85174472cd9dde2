"""lab.model.concurrency: were two requests in flight at once (hand-written timelines)."""

from __future__ import annotations

from lab.model import concurrency
from lab.model.history import Send


def ev(name: str, t: float) -> dict[str, object]:
    return {"event": name, "t": t}


def test_overlapping_requests_are_together() -> None:
    c = concurrency.at_backend(
        [ev("chat.received", 1.000), ev("chat.received", 1.004), ev("chat.done", 1.050), ev("chat.done", 1.060)]
    )
    assert c["in_flight_together"] and c["spread_ms"] == 4.0 and c["overlap_ms"] == 46.0
    assert concurrency.problem(c) is None


def test_one_after_the_other_is_not_exercised() -> None:
    c = concurrency.at_backend(
        [ev("chat.received", 1.0), ev("chat.done", 1.05), ev("chat.received", 1.07), ev("chat.done", 1.1)]
    )
    assert not c["in_flight_together"] and c["overlap_ms"] == -20.0
    assert "20.0 ms after the first had ended" in (concurrency.problem(c) or "")


def test_a_request_never_received_is_not_exercised() -> None:
    c = concurrency.at_backend([ev("chat.received", 1.0), ev("chat.done", 1.05)])
    assert c["requests"] == 1 and "only 1 of the 2 requests" in (concurrency.problem(c) or "")


def test_the_browser_view_of_a_black_box() -> None:
    a, b = Send("a", "x", 1, t_invoke=1.0), Send("b", "y", 1, t_invoke=1.01)
    a.complete("ok", 200, "", 1.2)
    b.complete("ok", 200, "", 1.3)
    c = concurrency.at_browser([a, b])
    assert c["where"] == "browser" and c["in_flight_together"] and c["spread_ms"] == 10.0


def test_a_tab_gap_is_exercised_only_near_the_gap_planned() -> None:
    c = concurrency.together([0.0, 0.1], [0.05, 0.2], "backend")  # 100 ms apart
    assert concurrency.gap_problem(c, 100) is None
    assert "planned 300 ms" in (concurrency.gap_problem(c, 300) or "")
    assert "planned 10 ms" in (concurrency.gap_problem(c, 10) or "")
    assert "only 1 of the 2" in (concurrency.gap_problem(concurrency.together([0.0], [0.1], "backend"), 10) or "")


def test_a_swept_gap_of_0_claims_both_at_once_and_an_unswept_pair_only_overlap() -> None:
    """A window sweep's 0 point that left 120 ms apart tested a later point: unknown; the plain
    two_tabs experiment (no sweep) asks only that both were in flight together."""
    late = concurrency.together([0.0, 0.12], [0.3, 0.4], "browser")
    assert "planned 0 ms (accepted 0-50 ms)" in (concurrency.window_problem(late, 0) or "")
    assert concurrency.window_problem(late, None) is None
    at_once = concurrency.together([0.0, 0.004], [0.3, 0.4], "browser")
    assert concurrency.window_problem(at_once, 0) is None
