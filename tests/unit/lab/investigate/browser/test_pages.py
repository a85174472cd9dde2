"""A black-box send the browser dropped when the machine's network changed: the lab's page sees
only "Failed to fetch"; the context's network event names it, and the send's reason then does
(lab.investigate.browser.pages.mark_dropped), so the checker makes the trial unknown."""

from __future__ import annotations

import json

from lab.investigate.browser.pages import mark_dropped
from lab.model.checker import NETWORK_CHANGED, check
from lab.model.history import Row, Send, Trial


def _send(text: str, turn: int, status: int | None) -> Send:
    s = Send(f"m{turn}", text, turn, t_invoke=float(turn))
    if status is None:
        s.complete("info", None, "TypeError: Failed to fetch", turn + 0.5)
    else:
        s.complete("ok", status, f"HTTP {status}", turn + 0.5)
    return s


def test_only_the_unanswered_send_whose_request_was_dropped_is_marked_and_its_trial_is_unknown() -> None:
    sends = [_send("q1 x", 1, 200), _send("q2 x", 2, None), _send("q3 x", 3, None), _send("q4 x", 4, 200)]
    dropped = [json.dumps({"message": "q2 x"}), "message=q4+x"]  # q4 was answered: not its failure
    mark_dropped(sends, dropped)
    assert [NETWORK_CHANGED in s.reason for s in sends] == [False, True, False, False]
    assert sends[1].reason == f"TypeError: Failed to fetch ({NETWORK_CHANGED})"
    mark_dropped(sends, dropped)  # marked once
    assert sends[1].reason.count(NETWORK_CHANGED) == 1

    rows = [
        Row("", role, f"{q} x" if role == "user" else f"re {q}") for q in ("q1", "q4") for role in ("user", "assistant")
    ]
    t = Trial("e1-none-settled-00", sends=sends, turns=4, final_rows=rows, page_after_refresh=rows)
    r = check(t)
    assert r.validity == "unknown" and NETWORK_CHANGED in r.reasons[-1], r


def test_a_form_encoded_body_is_matched_too() -> None:
    sends = [_send("hello there", 1, None)]
    mark_dropped(sends, ["message=hello+there"])
    assert NETWORK_CHANGED in sends[0].reason
