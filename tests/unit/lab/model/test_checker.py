"""The checker on hand-written histories, each with its exact expected result."""

from __future__ import annotations

from lab.model.checker import NOTHING_ACKED, check, check_safe
from lab.model.history import Row, Send, Trial


def s(
    mid: str, outcome: str, status: int | None = 200, turn: int = 1, t: float = 1.0, retry_of: str | None = None
) -> Send:
    send = Send(mid, f"text {mid}", turn, retry_of=retry_of, t_invoke=t - 0.1)
    send.complete(outcome, status, "", t)  # type: ignore[arg-type]
    return send


def rows(*pairs: str) -> list[Row]:
    return [Row(*p.split(":")) for p in pairs]


def trial(sends: list[Send], final: list[Row] | None, page: list[Row] | None = None, **kw: object) -> Trial:
    t = Trial("t1", sends=sends, final_rows=final, page_after_refresh=page, **kw)  # type: ignore[arg-type]
    return t


def test_everything_stored_is_valid() -> None:
    full = rows("a:user", "a:assistant", "b:user", "b:assistant")
    r = check(trial([s("a", "ok"), s("b", "ok", t=2)], full, page=full))
    assert r.validity == "valid"
    assert r.anomalies() == {
        "lost": 0,
        "lost_update": 0,
        "lost_user": 0,
        "lost_assistant": 0,
        "stale": 0,
        "duplicated": 0,
        "reordered": 0,
        "unexpected": 0,
        "expired": 0,
        "amnesia": 0,
        "history_failed": 0,
        "phantom_fail": 0,
    }
    assert (r.attempted, r.acknowledged, r.sends, r.acked_sends) == (2, 2, 2, 2)


def test_reply_row_lost_while_user_row_survived() -> None:
    r = check(trial([s("a", "ok"), s("b", "ok", t=2)], rows("a:user", "a:assistant", "b:user")))
    assert r.validity == "invalid"
    assert r.lost == {"user": [], "assistant": ["b"]}
    assert r.anomalies()["lost"] == 1 and r.anomalies()["lost_assistant"] == 1
    assert r.reasons == ["lost"]


def test_info_send_absent_is_allowed() -> None:
    r = check(trial([s("a", "ok"), s("b", "info", status=None, t=2)], rows("a:user", "a:assistant")))
    assert r.validity == "valid" and r.acknowledged == 1 and r.phantom_fail == []


def test_info_send_present_is_allowed_but_reported_as_phantom_fail() -> None:
    r = check(
        trial([s("a", "ok"), s("b", "info", status=503, t=2)], rows("a:user", "a:assistant", "b:user", "b:assistant"))
    )
    assert r.validity == "valid"
    assert r.phantom_fail == ["b"] and r.phantom_fail_definite == []


def test_aborted_info_send_present_is_not_a_phantom_fail() -> None:
    """Aborted by the refresh: the page never said it failed."""
    r = check(
        trial([s("a", "ok"), s("b", "info", status=None, t=2)], rows("a:user", "a:assistant", "b:user", "b:assistant"))
    )
    assert r.validity == "valid" and r.phantom_fail == []


def test_nothing_acknowledged_is_unknown_not_a_pass() -> None:
    """Every send answered 503 (measured: a backend whose shared client broke for good): no
    acknowledged turn could be lost, so the trial tested nothing -- unknown, never valid."""
    r = check(trial([s("a", "info", status=503), s("b", "info", status=503, t=2)], rows()))
    assert r.validity == "unknown" and r.reasons == [f"{NOTHING_ACKED} (2 sends: info x2)"]
    # ... while a definite anomaly is still one (a 4xx whose write landed).
    bad = check(trial([s("a", "fail", status=400)], rows("a:user")))
    assert bad.validity == "invalid"


def test_fail_send_present_is_invalid() -> None:
    r = check(trial([s("a", "fail", status=400)], rows("a:user")))
    assert r.validity == "invalid" and r.phantom_fail_definite == ["a"]
    assert r.reasons == ["phantom_fail"]


def test_expired_key_loses_the_conversation() -> None:
    r = check(
        trial([s("a", "ok"), s("b", "ok", t=2), s("c", "ok", t=3)], rows("c:user", "c:assistant"), key_expired=True)
    )
    assert r.validity == "invalid" and r.expired is True
    assert r.lost == {"user": ["a", "b"], "assistant": ["a", "b"]}
    assert r.reasons == ["lost", "expired"]


def test_expiry_without_loss_is_not_an_anomaly() -> None:
    r = check(trial([s("a", "ok")], rows("a:user", "a:assistant"), key_expired=True))
    assert r.validity == "valid" and r.expired is False


def test_duplicate_after_a_user_retry() -> None:
    r = check(
        trial([s("a", "info", status=503), s("a", "ok", t=2, retry_of="a")], rows("a:user", "a:user", "a:assistant"))
    )
    assert r.validity == "invalid"
    assert r.duplicated == ["a:user"] and r.acknowledged == 1 and r.sends == 2
    assert r.reasons == ["duplicated"]


def test_exactly_once_after_a_user_retry_is_valid() -> None:
    r = check(trial([s("a", "info", status=503), s("a", "ok", t=2, retry_of="a")], rows("a:user", "a:assistant")))
    assert r.validity == "valid" and r.duplicated == []


def test_amnesia_page_shows_none_of_the_acknowledged_turns() -> None:
    full = rows("a:user", "a:assistant")
    r = check(trial([s("a", "ok")], full, page=[], events=[{"kind": "refresh", "t": 5.0}]))
    assert r.validity == "invalid" and r.amnesia is True and r.stale == []  # all of it: amnesia, not stale
    assert r.reasons == ["amnesia"]


def test_stale_rows_missing_after_refresh_but_present_at_the_end() -> None:
    full = rows("a:user", "a:assistant", "b:user", "b:assistant")
    r = check(
        trial(
            [s("a", "ok"), s("b", "ok", t=2)],
            full,
            page=rows("a:user", "a:assistant", "b:user"),
            events=[{"kind": "refresh", "t": 5.0}],
        )
    )
    assert r.validity == "valid" and r.stale == ["b"] and r.amnesia is False


def test_a_cut_reply_missing_from_the_page_and_stored_is_shown_missing_not_stale() -> None:
    """A refresh mid-stream: the reply still being written is not on the reloaded page and is
    stored when the history settles -- what the page showed, neither stale nor lost."""
    full = rows("a:user", "a:assistant", "b:user", "b:assistant")
    cut = s("b", "ok", t=2)
    cut.cut = True
    r = check(
        trial(
            [s("a", "ok"), cut],
            full,
            page=rows("a:user", "a:assistant", "b:user"),
            events=[{"kind": "refresh", "t": 5.0}],
        )
    )
    assert r.validity == "valid" and r.stale == [] and r.cut_shown_missing == ["b"] and not r.lost_turns
    whole = check(trial([s("a", "ok"), cut], full, page=full, events=[{"kind": "refresh", "t": 5.0}]))
    assert whole.cut_shown_missing == []


def test_turns_acknowledged_after_the_refresh_are_not_expected_on_the_page() -> None:
    full = rows("a:user", "a:assistant", "b:user", "b:assistant")
    r = check(
        trial(
            [s("a", "ok"), s("b", "ok", t=9)],
            full,
            page=rows("a:user", "a:assistant"),
            events=[{"kind": "refresh", "t": 5.0}],
        )
    )
    assert r.stale == [] and r.validity == "valid"


def test_reordered_and_unexpected() -> None:
    r = check(
        trial([s("a", "ok"), s("b", "ok", t=2)], rows("b:user", "b:assistant", "a:user", "a:assistant", "zz:user"))
    )
    assert r.validity == "invalid"
    assert r.reordered == ["b"] and r.unexpected == ["zz"]  # b stored above a, sent before it
    assert r.reasons == ["reordered", "unexpected"]


def test_reply_before_its_user_row_is_reordered() -> None:
    r = check(trial([s("a", "ok")], rows("a:assistant", "a:user")))
    assert r.reordered == ["a"] and r.validity == "invalid"


def test_unknown_when_the_instrument_saw_nothing() -> None:
    inflight = Send("a", "x", 1)
    assert check(trial([inflight], rows())).validity == "unknown"
    assert check(trial([s("a", "ok")], None)).reasons == ["the final read is missing"]
    why_missing = trial([s("a", "ok")], None)
    why_missing.errors.append("final read: Timeout reading from socket")
    assert check(why_missing).reasons == ["the final read is missing", "final read: Timeout reading from socket"]
    # Nothing acknowledged and nothing to read: the trial exercised nothing (the reason a test's
    # unknown_ok excuses for a defect that fails every send).
    (why,) = check(trial([s("a", "info"), s("b", "info")], None)).reasons
    assert why.startswith("no send was acknowledged: the trial exercised nothing")
    assert check(trial([s("a", "ok")], rows("a:user", "a:assistant"), fault_confirmed=False)).validity == "unknown"
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


# ---------------------------------------------------------------- rows without ids (black box)


def bs(
    turn: int, outcome: str = "ok", reply: str | None = "", status: int | None = 200, t: float | None = None
) -> Send:
    """A black-box send: id t<turn>, the text the lab typed, the reply text its answer carried."""
    t = float(turn) if t is None else t
    send = Send(f"t{turn}", f"probe {turn}", turn, t_invoke=t, reply=reply if reply != "" else f"answer {turn}")
    send.complete(outcome, status, "", t + 0.5)  # type: ignore[arg-type]
    return send


def tr(*pairs: tuple[str, str]) -> list[Row]:
    return [Row("", role, text) for role, text in pairs]


def conv(n: int, reply: str | None = None) -> list[Row]:
    out: list[Row] = []
    for i in range(1, n + 1):
        out += tr(("user", f"probe {i}"), ("assistant", reply or f"answer {i}"))
    return out


def test_text_rows_all_stored_in_order_is_valid() -> None:
    r = check(trial([bs(1), bs(2), bs(3)], conv(3), page=conv(3)))
    assert r.validity == "valid" and r.anomalies() == {k: 0 for k in r.anomalies()}


def test_repeated_reply_texts_are_two_rows_not_a_duplicate_and_a_loss() -> None:
    same = "Hello! How can I help?"
    sends = [bs(i, reply=same) for i in (1, 2, 3)]
    r = check(trial(sends, conv(3, same), page=conv(3, same)))
    assert r.validity == "valid"
    assert r.duplicated == [] and r.lost == {"user": [], "assistant": []} and r.reordered == []


def test_repeated_reply_texts_one_really_missing() -> None:
    same = "Hello!"
    stored = tr(("user", "probe 1"), ("assistant", same), ("user", "probe 2"), ("user", "probe 3"), ("assistant", same))
    r = check(trial([bs(i, reply=same) for i in (1, 2, 3)], stored))
    assert r.lost == {"user": [], "assistant": ["t2"]} and r.duplicated == [] and r.reordered == []


def test_repeated_reply_stored_twice_is_one_duplicate() -> None:
    same = "Hello!"
    stored = conv(2, same)
    stored.insert(2, Row("", "assistant", same))  # u1 a1 a1' u2 a2
    r = check(trial([bs(1, reply=same), bs(2, reply=same)], stored))
    assert r.duplicated == ["t1:assistant"] and r.lost["assistant"] == [] and r.reordered == []


def test_failed_send_whose_write_landed_owns_its_equal_reply() -> None:
    """Turn 2 answered 500 after its write landed (its reply text never seen); every reply has
    the same text. The reply after turn 2's question is turn 2's, not a second copy of turn 1's
    (measured: a one-shot drop on an app answering "You said 47 characters." every time)."""
    same = "You said 47 characters."
    sends = [bs(1, reply=same), bs(2, "info", reply=None, status=500), bs(3, reply=same)]
    r = check(trial(sends, conv(3, same), page=conv(3, same)))
    assert r.duplicated == [] and r.lost == {"user": [], "assistant": []} and r.reordered == []
    assert r.phantom_fail == ["t2"] and r.validity == "valid"


def test_reply_stored_before_its_question_is_reordered_not_lost_nor_duplicated() -> None:
    stored = tr(
        ("user", "probe 1"),
        ("assistant", "answer 1"),
        ("assistant", "answer 2"),
        ("user", "probe 2"),
        ("user", "probe 3"),
        ("assistant", "answer 3"),
    )
    r = check(trial([bs(1), bs(2), bs(3)], stored))
    assert r.reordered == ["t2"]
    assert r.lost == {"user": [], "assistant": []} and r.duplicated == []
    assert r.validity == "invalid" and r.reasons == ["reordered"]


def test_reply_before_its_question_with_repeated_texts_is_reordered() -> None:
    same = "ok"
    stored = tr(("user", "probe 1"), ("assistant", same), ("assistant", same), ("user", "probe 2"))
    r = check(trial([bs(1, reply=same), bs(2, reply=same)], stored))
    assert r.reordered == ["t2"] and r.duplicated == [] and r.lost["assistant"] == []


def test_interleaved_turns_are_reordered() -> None:
    """Turn 2 was sent after turn 1 was answered, yet its question sits inside turn 1."""
    stored = tr(("user", "probe 1"), ("user", "probe 2"), ("assistant", "answer 1"), ("assistant", "answer 2"))
    r = check(trial([bs(1), bs(2)], stored))
    assert r.reordered == ["t1"] and r.lost["assistant"] == [] and r.duplicated == []


def test_questions_out_of_send_order() -> None:
    stored = tr(("user", "probe 2"), ("assistant", "answer 2"), ("user", "probe 1"), ("assistant", "answer 1"))
    r = check(trial([bs(1), bs(2)], stored))
    assert r.reordered == ["t2"]


def test_unknown_reply_text_matches_by_position() -> None:
    stored = tr(("user", "probe 1"), ("assistant", "streamed a"), ("user", "probe 2"), ("assistant", "streamed b"))
    r = check(trial([bs(1, reply=None), bs(2, reply=None)], stored))
    assert r.validity == "valid" and r.anomalies()["lost"] == 0


def test_app_rows_that_match_nothing_are_not_the_labs_business() -> None:
    stored = tr(("assistant", "Welcome!")) + conv(2)
    r = check(trial([bs(1), bs(2)], stored))
    assert r.validity == "valid" and r.unexpected == []


def test_decorated_user_text_still_matches() -> None:
    stored = [Row("", "user", "[12:00] probe 1"), Row("", "assistant", "answer 1")]
    assert check(trial([bs(1)], stored)).validity == "valid"


def test_page_read_failed_is_history_failed_not_amnesia() -> None:
    """An empty page whose history read failed shows an error, not a forgotten conversation:
    counted as history_failed (invalid), never as amnesia (measured: shared_loop_client's failed
    reads counted as amnesia kept session_cookie's verdict open, 9/15 without it)."""
    t = trial([bs(1), bs(2)], conv(2), page=[], page_error="HTTP 503")
    r = check(t)
    assert r.amnesia and r.page_failed and r.stale == []
    assert r.anomalies()["amnesia"] == 0 and r.anomalies()["history_failed"] == 1
    assert r.validity == "invalid" and r.reasons == ["history_failed"]


def test_a_history_read_the_browser_dropped_when_the_network_changed_is_unknown_not_history_failed() -> None:
    """The page's read after the refresh got no answer and the browser names the machine's network
    (a correct app's "TypeError: Failed to fetch" in a CI run beside other work): the empty page
    is no doing of the app's -- unknown. A read with no answer for another reason (the app reset
    the connection) stays history_failed, and a loss in Redis beside a dropped read still stands."""
    dropped = check(
        trial([bs(1), bs(2)], conv(2), page=[], page_error="TypeError: Failed to fetch (net::ERR_NETWORK_CHANGED)")
    )
    assert dropped.validity == "unknown" and "history read" in dropped.reasons[-1], dropped
    assert dropped.anomalies()["amnesia"] == 0
    reset = check(trial([bs(1), bs(2)], conv(2), page=[], page_error="TypeError: Failed to fetch"))
    assert reset.validity == "invalid" and reset.reasons == ["history_failed"], reset
    lost = check(
        trial([bs(1), bs(2)], conv(1), page=[], page_error="TypeError: Failed to fetch (net::ERR_NETWORK_CHANGED)")
    )
    assert lost.validity == "invalid" and "history_failed" not in lost.reasons and lost.lost_turns, lost


def test_unknown_trial_stays_unknown() -> None:
    r = check(trial([bs(1)], conv(1), unknown="no send was acknowledged"))
    assert r.validity == "unknown" and r.reasons == ["no send was acknowledged"]


def sent(mid: str, t0: float, t1: float, outcome: str = "ok", text: str | None = None) -> Send:
    """A send in flight from t0 to t1 (two of them overlapping: two tabs)."""
    send = Send(mid, text or f"text {mid}", 5, t_invoke=t0)
    send.complete(outcome, 200 if outcome == "ok" else 503, "", t1)  # type: ignore[arg-type]
    return send


def test_two_tabs_interleaved_turns_are_not_reordered() -> None:
    """Two turns in flight together may interleave in any order: b's question between a's
    question and reply, and b's question stored first, are both fine."""
    a, b = sent("a", 1.0, 1.5), sent("b", 1.01, 1.4)
    for stored in (
        rows("a:user", "b:user", "a:assistant", "b:assistant"),
        rows("b:user", "a:user", "b:assistant", "a:assistant"),
    ):
        r = check(trial([a, b], stored))
        assert r.validity == "valid" and r.reordered == [], stored


def test_two_tabs_reply_above_its_own_question_is_still_reordered() -> None:
    a, b = sent("a", 1.0, 1.5), sent("b", 1.01, 1.4)
    r = check(trial([a, b], rows("a:user", "b:assistant", "b:user", "a:assistant")))
    assert r.reordered == ["b"] and r.validity == "invalid"


def test_lost_update_is_a_lost_turn_concurrent_with_a_stored_one() -> None:
    first = sent("p", 0.0, 0.5)
    a, b = sent("a", 1.0, 1.5), sent("b", 1.01, 1.4)
    r = check(trial([first, a, b], rows("p:user", "p:assistant", "b:user", "b:assistant")))
    assert r.validity == "invalid" and r.reasons == ["lost"]
    assert r.lost_turns == ["a"] and r.lost_update == ["a"]
    assert r.anomalies()["lost_update"] == 1


def test_a_lost_turn_after_the_others_is_not_a_lost_update() -> None:
    """Sequential turns: the loss has some other cause, not an overwrite by a concurrent write."""
    a, b = sent("a", 1.0, 1.5), sent("b", 2.0, 2.5)
    r = check(trial([a, b], rows("b:user", "b:assistant")))
    assert r.lost_turns == ["a"] and r.lost_update == []


def test_both_concurrent_turns_lost_is_no_lost_update() -> None:
    """Nothing concurrent survived: nothing overwrote them (e.g. the key expired)."""
    a, b = sent("a", 1.0, 1.5), sent("b", 1.01, 1.4)
    r = check(trial([a, b], []))
    assert sorted(r.lost_turns) == ["a", "b"] and r.lost_update == []


def test_double_submit_stored_once_is_valid_twice_is_duplicated() -> None:
    """A double click: one id sent twice at once. Stored once: absorbed; twice: duplicated."""
    one, two = sent("a", 1.0, 1.3), sent("a", 1.002, 1.31)
    r = check(trial([one, two], rows("a:user", "a:assistant")))
    assert r.validity == "valid" and r.duplicated == [] and r.attempted == 1 and r.sends == 2
    r = check(trial([one, two], rows("a:user", "a:assistant", "a:user", "a:assistant")))
    assert r.validity == "invalid" and r.duplicated == ["a:user", "a:assistant"]


def test_both_concurrent_replies_lost_is_no_lost_update() -> None:
    """Both replies missing (e.g. never written): nothing of that role survived to overwrite them."""
    a, b = sent("a", 1.0, 1.5), sent("b", 1.01, 1.4)
    r = check(trial([a, b], rows("a:user", "b:user")))
    assert r.lost["assistant"] == ["a", "b"] and r.lost_update == []


def test_a_reply_overwritten_by_the_other_tabs_reply_is_a_lost_update() -> None:
    a, b = sent("a", 1.0, 1.5), sent("b", 1.01, 1.4)
    r = check(trial([a, b], rows("a:user", "b:user", "b:assistant")))
    assert r.lost == {"user": [], "assistant": ["a"]} and r.lost_update == ["a"]


def test_a_trial_that_acknowledged_nothing_says_how_its_sends_ended() -> None:
    t = Trial("x", final_rows=None)
    for i, (status, reason) in enumerate([(None, "timeout"), (None, "timeout"), (503, "HTTP 503")]):
        s = Send(f"t{i}", "x", i + 1)
        s.complete("info", status, reason, 1.0)
        t.sends.append(s)
    r = check(t)
    assert r.validity == "unknown" and r.reasons[0].startswith(NOTHING_ACKED), r.reasons
    assert "(3 sends: HTTP 503 x1, timeout x2; no session to read)" in r.reasons[0], r.reasons


def test_a_model_call_told_less_is_a_finding_beside_a_valid_history() -> None:
    # Redis kept both turns and the page shows them, but the call for b carried nothing of a:
    # what the model was told is reported (told_less), the history's verdict is unchanged.
    full = rows("a:user", "a:assistant", "b:user", "b:assistant")
    sends = [s("a", "ok"), s("b", "ok", turn=2, t=2)]
    calls = [
        {"messages": [{"role": "user", "text": "text a"}]},
        {"messages": [{"role": "system", "text": "Be brief."}, {"role": "user", "text": "text b"}]},
    ]
    r = check(trial(sends, full, page=full, model_calls=calls))
    assert r.validity == "valid" and r.told_less == ["b"]
    assert "told_less" not in r.anomalies()
    calls[1]["messages"].insert(1, {"role": "user", "text": "text a"})
    assert check(trial(sends, full, page=full, model_calls=calls)).told_less == []
    assert check(trial(sends, full, page=full)).told_less == []  # no stand-in: nothing to judge


def test_a_reply_whose_text_is_unknown_is_placed_the_way_the_list_runs() -> None:
    """The last send was aborted by a reload mid-write (in_flight): its write landed, its reply's
    text was never seen. In a history that runs newest first against the spec's read (every
    reply above its question), that reply is the row above its question -- not the next turn's
    reply below it (which made turn 2's reply 'lost' and turn 3's 'duplicated')."""
    sends = [bs(1), bs(2), bs(3, "info", reply=None, status=None)]
    r = check(trial(sends, list(reversed(conv(3))), page=list(reversed(conv(3)))))
    assert r.lost == {"user": [], "assistant": []} and r.duplicated == [], r
    assert r.reordered  # the mirror itself is history_reversed's to name
    r = check(trial(sends, conv(3), page=conv(3)))  # the usual direction: valid
    assert r.validity == "valid", r


def test_a_send_the_browser_dropped_when_the_network_changed_makes_the_trial_unknown() -> None:
    """net::ERR_NETWORK_CHANGED: Chromium failed the request because an interface of the machine
    came or went (a Docker bridge beside the run) -- no answer, for no doing of the app's. The
    turn it was to test tested nothing: unknown, never a pass (a swallowed_errors trial under a
    one-send `down` was judged valid so in a CI run). A real loss beside it still stands."""
    dropped = s("b", "info", status=None, t=2)
    dropped.reason = "net::ERR_NETWORK_CHANGED"
    r = check(trial([s("a", "ok"), dropped, s("c", "ok", t=3)], rows("a:user", "a:assistant", "c:user", "c:assistant")))
    assert r.validity == "unknown" and "turn 1's request (net::ERR_NETWORK_CHANGED" in r.reasons[-1], r
    lost = check(trial([s("a", "ok"), dropped, s("c", "ok", t=3)], rows("c:user", "c:assistant")))
    assert lost.validity == "invalid" and lost.lost["user"] == ["a"], lost
