"""The lab's page's reading of a polled reply ([chat] reply_from = "history"): what one history
read shows of the reply to a message, by the lab's own parse of the spec's history."""

from __future__ import annotations

import json
from pathlib import Path

from lab.investigate.browser.page import shown
from lab.investigate.spec import parse as sp

SPEC = sp.load(Path(__file__).resolve().parents[5] / "examples" / "node-relay-poll.toml")


def _log(*rows: tuple[str, str]) -> str:
    return json.dumps({"thread": "t", "log": [{"by": by, "text": text} for by, text in rows]})


def test_a_reply_after_the_message_answers_it_and_one_before_it_does_not() -> None:
    assert SPEC.chat.reply_from == "history"
    earlier = (("me", "first"), ("assistant", "I read 1 word."))
    assert shown(SPEC, _log(*earlier), "second") == {"replies": 1, "asked": False, "answered": False}
    asked = _log(*earlier, ("me", "second"))
    assert shown(SPEC, asked, "second") == {"replies": 1, "asked": True, "answered": False}
    done = _log(*earlier, ("me", "second"), ("assistant", "I read 1 word."))
    assert shown(SPEC, done, "second") == {"replies": 2, "asked": True, "answered": True}  # replies that repeat


def test_a_second_tabs_question_and_reply_after_the_message_are_not_its_reply() -> None:
    """Two tabs in one conversation: the other tab's reply lands first, after both questions --
    the message is answered only when its own reply is there too (each question gets one)."""
    both = (("me", "mine"), ("me", "theirs"), ("assistant", "I read 1 word."))
    assert shown(SPEC, _log(*both), "mine")["answered"] is False
    assert shown(SPEC, _log(*both), "theirs")["answered"] is True
    assert shown(SPEC, _log(*both, ("assistant", "I read 1 word.")), "mine")["answered"] is True


def test_a_reply_to_a_message_the_store_lost_is_counted_and_a_body_outside_the_form_shows_nothing() -> None:
    # The message's write lost, the job's reply stored: no row to follow, one reply more than before.
    lost = {"replies": 1, "asked": False, "answered": False}
    assert shown(SPEC, _log(("assistant", "I read 2 words.")), "lost one") == lost
    assert shown(SPEC, "<html>502 Bad Gateway</html>", "x") == {"replies": -1, "asked": False, "answered": False}
