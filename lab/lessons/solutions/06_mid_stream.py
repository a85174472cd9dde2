"""Lesson 6 solution: store the turn before its first token leaves.

The first token is the acknowledgement: from then on the user believes the turn exists. Code
after the token loop runs only if the client stayed to the end; a refresh mid-stream closes the
generator at its next write and that code never runs.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from services.chat.defects import Behaviour

STREAM_SAVE: Literal["before_first_token", "at_stream_end"] = "before_first_token"


def apply(b: Behaviour) -> Behaviour:
    return replace(b, stream_save=STREAM_SAVE)
