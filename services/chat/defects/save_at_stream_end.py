"""save_at_stream_end: a streamed turn is stored only after its last token was sent.

The turn is acknowledged by its first token; a refresh mid-stream closes the connection, the
server's generator is closed at its next write, and the save after the loop never runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

from services.chat.defects import Behaviour, register


def tokens_then_save(tokens: Iterator[bytes], save: Callable[[], None]) -> Iterator[bytes]:
    """Stream the tokens, then store the whole turn (its reply known in full)."""
    for line in tokens:
        yield line
    save()  # the incident's line: reached only if the client read the stream to its end


@register("save_at_stream_end", "a streamed turn is stored only when its stream completes")
def apply(b: Behaviour) -> Behaviour:
    return replace(b, stream_save=tokens_then_save)
