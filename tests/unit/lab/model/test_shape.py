"""The shape of the record holding a reply: the same for two replies stored by the same code
(ids, times and the text left out), another for a reply the app marked, in every layout apps
use -- a JSON row, a JSON document of the whole conversation, a hash's or a stream's fields, a
raw line -- and never a whole reply's record taken for its own cut start."""

from __future__ import annotations

import json

import pytest

from lab.model.shape import shape

CUT = 'Turn 2 as I see it. You first said "chaoslab probe x1'
WHOLE = 'Turn 3 as I see it. You first said "chaoslab probe x1 turn..."; just now you said "c..."'


def _row(text: str, **extra: object) -> bytes:
    return json.dumps({"id": "9f3a77c2", "role": "assistant", "content": text, "at": 1.5e9, **extra}).encode()


def test_two_replies_in_one_codes_rows_have_one_shape_and_a_marked_one_another() -> None:
    assert shape("RPUSH", [_row(CUT)], CUT) == shape("RPUSH", [_row(WHOLE)], WHOLE) is not None
    assert shape("RPUSH", [_row(CUT, interrupted=True)], CUT) != shape("RPUSH", [_row(WHOLE)], WHOLE)
    assert shape("RPUSH", [_row(CUT, status="partial")], CUT) != shape("RPUSH", [_row(WHOLE, status="done")], WHOLE)
    assert shape("RPUSH", [_row(CUT + " [stopped]")], CUT) != shape("RPUSH", [_row(WHOLE)], WHOLE)


@pytest.mark.parametrize(
    "cmd, values",
    [
        ("SET", [json.dumps({"messages": [{"role": "user", "content": "hi 1"}, {"role": "bot", "content": "{}"}]})]),
        ("HSET", ["role", "bot", "content", "{}"]),
        ("XADD", ["MAXLEN", "~", "500", "*", "role", "bot", "content", "{}"]),
        ("RPUSH", ["bot: {}"]),
        ("RPUSH", [json.dumps("bot: {}")]),
    ],
)
def test_each_layout_gives_the_cut_and_the_whole_reply_one_shape(cmd: str, values: list[str]) -> None:
    def enc(text: str) -> list[bytes]:
        # Inside a JSON value the text's quotes are escaped; a raw field holds it as it is.
        return [
            v.replace("{}", text.replace('"', '\\"') if v != "{}" and v[0] in '{"' else text).encode() for v in values
        ]

    assert shape(cmd, enc(CUT), CUT) == shape(cmd, enc(WHOLE), WHOLE) is not None


def test_a_whole_reply_that_starts_with_the_cut_text_is_not_its_record() -> None:
    cut, whole = "Turn 1 as I see it: this is", "Turn 1 as I see it: this is where our conversation starts."
    assert shape("RPUSH", [_row(whole)], cut, [whole, cut]) is None
    assert shape("RPUSH", [_row(whole), _row(cut)], cut, [whole, cut]) is not None
    assert shape("RPUSH", [b"nothing of it"], cut) is None and shape("RPUSH", [_row("x")], " ") is None
