"""Where each sent message's rows are: an app's own assistant row (a greeting stored with the
conversation, a note) is not taken for a reply -- neither a copy of a reply whose text the lab
does not know (a cut stream's) nor one stored differently from how it was answered."""

from __future__ import annotations

from lab.model.checker import check_safe
from lab.model.history import Row, Send, Trial

GREETING = Row("", "assistant", "Hi! How can I help?")


def _send(k: int, reply: str | None, cut: bool = False) -> Send:
    s = Send(f"m{k}", f"q{k}", k, reply=reply, streamed=cut, cut=cut or None)
    s.complete("ok", 200, "HTTP 200", float(k))
    return s


def _check(sends: list[Send], *rows: tuple[str, str]) -> tuple[str, list[str], list[str]]:
    stored = [Row("", role, text) for role, text in rows]
    t = Trial("t0", sends=sends, final_rows=stored, page_after_refresh=stored, turns=len(sends), history_reads=[200])
    r = check_safe(t)
    return r.validity, r.duplicated, r.reordered


def test_a_greeting_beside_a_cut_reply_is_no_copy_of_it() -> None:
    sends = [_send(1, "a1"), _send(2, "a2"), _send(3, None, cut=True)]
    rows = [
        ("user", "q1"),
        ("assistant", "a1"),
        ("user", "q2"),
        ("assistant", "a2"),
        ("user", "q3"),
        ("assistant", "a"),
    ]
    assert _check(sends, (GREETING.role, GREETING.text), *rows) == ("valid", [], [])


def test_a_greeting_beside_replies_stored_trimmed_is_no_copy_of_them() -> None:
    sends = [_send(1, "a1\n"), _send(2, "a2\n")]
    rows = [(GREETING.role, GREETING.text), ("user", "q1"), ("assistant", "a1"), ("user", "q2"), ("assistant", "a2")]
    assert _check(sends, *rows) == ("valid", [], [])


def test_a_reply_stored_twice_with_its_own_text_is_still_a_copy() -> None:
    sends = [_send(1, "a1"), _send(2, "a2")]
    rows = [("user", "q1"), ("assistant", "a1"), ("assistant", "a1"), ("user", "q2"), ("assistant", "a2")]
    validity, duplicated, _ = _check(sends, *rows)
    assert validity == "invalid" and duplicated == ["m1:assistant"]


def test_a_reply_after_two_tabs_questions_is_the_nearer_ones_not_a_failed_earlier_turns() -> None:
    """A first turn answered 500 (its question stored, no reply), then two tabs' turns in flight
    together, their replies' texts unknown (streamed): the second reply below both questions is
    the nearer question's -- given to the failed first turn, the turns read as out of order."""
    failed = Send("m1", "q1", 1)
    failed.complete("info", 500, "HTTP 500", 1.0)
    tabs = [Send("m2", "q2", 2, t_invoke=2.0), Send("m2b", "q2b", 2, t_invoke=2.0)]
    for s in tabs:
        s.complete("ok", 200, "HTTP 200", 3.0)
    rows = [("user", "q1"), ("user", "q2b"), ("user", "q2"), ("assistant", "a"), ("assistant", "b")]
    assert _check([failed, *tabs], *rows) == ("valid", [], [])
