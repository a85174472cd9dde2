"""The checker on hand-written histories, each with its exact expected result."""

from __future__ import annotations

from lab.checker import check, check_safe
from lab.history import Row, Send, Trial


def s(mid: str, outcome: str, status: int | None = 200, turn: int = 1, t: float = 1.0,
      retry_of: str | None = None) -> Send:
    send = Send(mid, f"text {mid}", turn, retry_of=retry_of, t_invoke=t - 0.1)
    send.complete(outcome, status, "", t)  # type: ignore[arg-type]
    return send


def rows(*pairs: str) -> list[Row]:
    return [Row(*p.split(":")) for p in pairs]


def trial(sends: list[Send], final: list[Row] | None, page: list[Row] | None = None,
          **kw: object) -> Trial:
    t = Trial("t1", sends=sends, final_rows=final, page_after_refresh=page, **kw)  # type: ignore[arg-type]
    return t


def test_everything_stored_is_valid() -> None:
    full = rows("a:user", "a:assistant", "b:user", "b:assistant")
    r = check(trial([s("a", "ok"), s("b", "ok", t=2)], full, page=full))
    assert r.validity == "valid"
    assert r.anomalies() == {"lost": 0, "lost_user": 0, "lost_assistant": 0, "stale": 0,
                             "duplicated": 0, "reordered": 0, "unexpected": 0, "expired": 0,
                             "amnesia": 0, "phantom_fail": 0}
    assert (r.attempted, r.acknowledged, r.sends, r.acked_sends) == (2, 2, 2, 2)


def test_reply_row_lost_while_user_row_survived() -> None:
    r = check(trial([s("a", "ok"), s("b", "ok", t=2)],
                    rows("a:user", "a:assistant", "b:user")))
    assert r.validity == "invalid"
    assert r.lost == {"user": [], "assistant": ["b"]}
    assert r.anomalies()["lost"] == 1 and r.anomalies()["lost_assistant"] == 1
    assert r.reasons == ["lost"]


def test_info_send_absent_is_allowed() -> None:
    r = check(trial([s("a", "ok"), s("b", "info", status=None, t=2)], rows("a:user", "a:assistant")))
    assert r.validity == "valid" and r.acknowledged == 1 and r.phantom_fail == []


def test_info_send_present_is_allowed_but_reported_as_phantom_fail() -> None:
    r = check(trial([s("a", "ok"), s("b", "info", status=503, t=2)],
                    rows("a:user", "a:assistant", "b:user", "b:assistant")))
    assert r.validity == "valid"
    assert r.phantom_fail == ["b"] and r.phantom_fail_definite == []


def test_aborted_info_send_present_is_not_a_phantom_fail() -> None:
    """Aborted by the refresh: the page never said it failed."""
    r = check(trial([s("a", "info", status=None)], rows("a:user", "a:assistant")))
    assert r.validity == "valid" and r.phantom_fail == []


def test_fail_send_present_is_invalid() -> None:
    r = check(trial([s("a", "fail", status=400)], rows("a:user")))
    assert r.validity == "invalid" and r.phantom_fail_definite == ["a"]
    assert r.reasons == ["phantom_fail"]


def test_expired_key_loses_the_conversation() -> None:
    r = check(trial([s("a", "ok"), s("b", "ok", t=2), s("c", "ok", t=3)],
                    rows("c:user", "c:assistant"), key_expired=True))
    assert r.validity == "invalid" and r.expired is True
    assert r.lost == {"user": ["a", "b"], "assistant": ["a", "b"]}
    assert r.reasons == ["lost", "expired"]


def test_expiry_without_loss_is_not_an_anomaly() -> None:
    r = check(trial([s("a", "ok")], rows("a:user", "a:assistant"), key_expired=True))
    assert r.validity == "valid" and r.expired is False


def test_duplicate_after_a_user_retry() -> None:
    r = check(trial([s("a", "info", status=503), s("a", "ok", t=2, retry_of="a")],
                    rows("a:user", "a:user", "a:assistant")))
    assert r.validity == "invalid"
    assert r.duplicated == ["a:user"] and r.acknowledged == 1 and r.sends == 2
    assert r.reasons == ["duplicated"]


def test_exactly_once_after_a_user_retry_is_valid() -> None:
    r = check(trial([s("a", "info", status=503), s("a", "ok", t=2, retry_of="a")],
                    rows("a:user", "a:assistant")))
    assert r.validity == "valid" and r.duplicated == []


def test_amnesia_page_shows_none_of_the_acknowledged_turns() -> None:
    full = rows("a:user", "a:assistant")
    r = check(trial([s("a", "ok")], full, page=[],
                    events=[{"kind": "refresh", "t": 5.0}]))
    assert r.validity == "invalid" and r.amnesia is True and r.stale == ["a"]
    assert r.reasons == ["amnesia"]


def test_stale_rows_missing_after_refresh_but_present_at_the_end() -> None:
    full = rows("a:user", "a:assistant", "b:user", "b:assistant")
    r = check(trial([s("a", "ok"), s("b", "ok", t=2)], full, page=rows("a:user", "a:assistant", "b:user"),
                    events=[{"kind": "refresh", "t": 5.0}]))
    assert r.validity == "valid" and r.stale == ["b"] and r.amnesia is False


def test_turns_acknowledged_after_the_refresh_are_not_expected_on_the_page() -> None:
    full = rows("a:user", "a:assistant", "b:user", "b:assistant")
    r = check(trial([s("a", "ok"), s("b", "ok", t=9)], full, page=rows("a:user", "a:assistant"),
                    events=[{"kind": "refresh", "t": 5.0}]))
    assert r.stale == [] and r.validity == "valid"


def test_reordered_and_unexpected() -> None:
    r = check(trial([s("a", "ok"), s("b", "ok", t=2)],
                    rows("b:user", "b:assistant", "a:user", "a:assistant", "zz:user")))
    assert r.validity == "invalid"
    assert r.reordered == ["b", "a"] and r.unexpected == ["zz"]
    assert r.reasons == ["reordered", "unexpected"]


def test_reply_before_its_user_row_is_reordered() -> None:
    r = check(trial([s("a", "ok")], rows("a:assistant", "a:user")))
    assert r.reordered == ["a"] and r.validity == "invalid"


def test_unknown_when_the_instrument_saw_nothing() -> None:
    inflight = Send("a", "x", 1)
    assert check(trial([inflight], rows())).validity == "unknown"
    assert check(trial([s("a", "ok")], None)).reasons == ["the final Redis read is missing"]
    assert check(trial([s("a", "ok")], rows("a:user", "a:assistant"),
                       fault_confirmed=False)).validity == "unknown"
    r = check(trial([s("a", "ok")], rows("a:user", "a:assistant"), refresh_reached=False))
    assert r.validity == "unknown" and r.reasons == ["the refresh point was not reached"]


def test_check_safe_turns_a_crash_into_unknown() -> None:
    broken = Trial("t", sends=[s("a", "ok")], final_rows=[object()])  # type: ignore[list-item]
    r = check_safe(broken)
    assert r.validity == "unknown" and r.reasons[0].startswith("checker error: AttributeError")


def test_a_send_completes_once_with_a_known_outcome() -> None:
    import pytest
    x = Send("a", "x", 1)
    with pytest.raises(ValueError, match="outcome must be one of"):
        x.complete("maybe", None, "", 1.0)  # type: ignore[arg-type]
    x.complete("ok", 200, "", 1.0)
    with pytest.raises(ValueError, match="completed twice"):
        x.complete("info", None, "", 2.0)


def test_unmet_preconditions_make_the_trial_unknown() -> None:
    r = check(trial([s("a", "ok")], rows(), preconditions_met=False, errors=["gap too long"]))
    assert r.validity == "unknown" and r.reasons == ["the experiment's preconditions did not hold", "gap too long"]
