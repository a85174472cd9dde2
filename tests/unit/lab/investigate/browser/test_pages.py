"""A black-box send the browser dropped when the machine's network changed: the lab's page sees
only "Failed to fetch"; the context's network event names it, and the send's reason then does
(lab.investigate.browser.pages.mark_dropped), so the checker makes the trial unknown."""

from __future__ import annotations

import json
import time
from typing import cast

from playwright.async_api import Request

from lab.investigate.browser.pages import Pages, Read, mark_dropped
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


def test_a_failed_read_is_named_only_from_the_given_moment() -> None:
    """The browser's reason for a read it failed names a history read with no answer only when it
    came after that trial's refresh (Pages.error_of); a send is not a read."""

    class _Req:
        def __init__(self, method: str, failure: str) -> None:
            self.method, self.failure, self.post_data = method, failure, "{}"

    pages = Pages.__new__(Pages)
    pages.dropped, pages._reads_failed = [], []
    before = time.time()
    pages._failed(cast(Request, _Req("GET", NETWORK_CHANGED)))
    pages._failed(cast(Request, _Req("GET", NETWORK_CHANGED)))
    pages._failed(cast(Request, _Req("POST", "net::ERR_CONNECTION_RESET")))
    assert pages.read_failures(before) == [NETWORK_CHANGED] and pages.read_failures(time.time() + 1) == []
    assert pages.dropped == []  # a send reset by the app is no machine's doing
    unanswered = Read(None, None, "TypeError: Failed to fetch")
    assert pages.error_of(unanswered, before) == f"TypeError: Failed to fetch ({NETWORK_CHANGED})"
    assert pages.error_of(unanswered, time.time() + 1) == "TypeError: Failed to fetch"
    assert pages.error_of(Read(503, None), before) == "HTTP 503"  # answered: the app's own failure
    assert pages.error_of(Read(200, []), before) is None
