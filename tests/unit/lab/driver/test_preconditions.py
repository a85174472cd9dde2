"""A refresh that claims a moment inside the last send, checked from the backend's events: a
mid_stream reload after the stream completed, an in_flight reload after the answer arrived."""

from __future__ import annotations

from typing import Any

from lab.model.history import Send, Trial
from lab.driver.preconditions import window_missed


def _trial(last_status: int | None, outcome: str = "info") -> Trial:
    t = Trial("t1", refresh="mid_stream", turns=2)
    s1 = Send("m1", "a", 1)
    s1.complete("ok", 200, "", 1.0)
    s2 = Send("m2", "b", 2)
    s2.complete(outcome, last_status, "net::ERR_ABORTED" if last_status is None else "", 2.0)  # type: ignore[arg-type]
    t.sends = [s1, s2]
    return t


def _closed(completed: bool) -> dict[str, list[dict[str, Any]]]:
    return {"m2": [{"event": "chat.received"}, {"event": "chat.stream_closed", "completed": completed}]}


def test_a_stream_the_reload_cut_tested_the_window() -> None:
    assert window_missed("mid_stream", 2, _trial(200, "ok"), _closed(False)) is None


def test_a_stream_that_completed_before_the_reload_missed_it() -> None:
    assert window_missed("mid_stream", 2, _trial(200, "ok"), _closed(True)) == (
        "mid_stream window missed: the last reply's stream had completed before the reload cut it"
    )


def test_no_stream_event_yet_is_not_called_missed() -> None:
    assert window_missed("mid_stream", 2, _trial(200, "ok"), {}) is None


def test_an_in_flight_reload_that_aborted_the_send_tested_the_window() -> None:
    assert window_missed("in_flight", 2, _trial(None), {}) is None


def test_an_in_flight_reload_after_the_answer_missed_it() -> None:
    assert window_missed("in_flight", 2, _trial(200, "ok"), {}) == (
        "in_flight window missed: the last send's answer (HTTP 200) reached the page before the reload left"
    )


def test_a_refresh_never_reached_is_the_checkers_to_say() -> None:
    t = _trial(200, "ok")
    t.refresh_reached = False
    assert window_missed("in_flight", 2, t, {}) is None
    assert window_missed("settled", 2, _trial(200, "ok"), _closed(True)) is None
