"""Lesson 6 exercise: when a streamed turn is stored.

A streamed reply is acknowledged by its first token. The view (services/chat/views.py) stores
the turn either before the first token leaves ("before_first_token") or after the last one
("at_stream_end", code after the token loop of ``_stream``). Choose.
Check with: lab lesson 6 --check
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from services.chat.defects import Behaviour

# "Store the whole turn once, when we know the full reply."
STREAM_SAVE: Literal["before_first_token", "at_stream_end"] = "at_stream_end"


def apply(b: Behaviour) -> Behaviour:
    return replace(b, stream_save=STREAM_SAVE)
