"""save_at_stream_end: a streamed turn is stored only after its last token was sent.

The turn is acknowledged by its first token; a refresh mid-stream closes the connection, the
server's generator is closed at its next write, and the save after the loop never runs.
"""

from __future__ import annotations

from dataclasses import replace

from services.chat.defects import Behaviour, register


@register("save_at_stream_end", "a streamed turn is stored only when its stream completes")
def apply(b: Behaviour) -> Behaviour:
    return replace(b, stream_save="at_stream_end")
