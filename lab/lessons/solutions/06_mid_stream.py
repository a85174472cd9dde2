"""Lesson 6 solution: store the turn before its first token leaves.

The first token is the acknowledgement: from then on the user believes the turn exists. Code
after the token loop runs only if the client stayed to the end; a refresh mid-stream closes the
generator at its next write and that code never runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

from services.chat.defects import Behaviour


def stream(tokens: Iterator[bytes], save: Callable[[], None]) -> Iterator[bytes]:
    save()  # before the first token: the acknowledgement now means "stored"
    yield from tokens


def apply(b: Behaviour) -> Behaviour:
    return replace(b, stream_save=stream)
