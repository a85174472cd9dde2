"""swallowed_errors: a failed store step is logged and the request answers 200 anyway.

The user sees a normal reply; the turn was never stored. A failed history read becomes an
empty history, so the model greets the user as a stranger.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from services.chat.defects import Behaviour, register

log = logging.getLogger("chat")


def log_and_continue(exc: BaseException, what: str) -> None:
    log.warning("%s failed (ignored): %s: %s", what, type(exc).__name__, exc)


@register("swallowed_errors", "store errors logged, 200 returned")
def apply(b: Behaviour) -> Behaviour:
    return replace(b, on_store_error=log_and_continue)
