"""Lesson 5 exercise: what a request does when a Redis step fails.

``on_store_error(exc, what)`` is called by the view when saving the message, saving the reply
or reading the history raised (services/chat/views.py ``_store`` / ``_read``). Whatever it does
not raise, the view carries on and answers 200. ``services.chat.errors.ApiError(status, code,
message)`` becomes a JSON error answer. Check with: lab lesson 5 --check
"""

from __future__ import annotations

import logging
from dataclasses import replace

from services.chat.defects import Behaviour

log = logging.getLogger("chat")


def on_store_error(exc: BaseException, what: str) -> None:
    # "A hiccup in the cache must not break the chat": log it and carry on.
    log.warning("%s failed (ignored): %s: %s", what, type(exc).__name__, exc)


def apply(b: Behaviour) -> Behaviour:
    return replace(b, on_store_error=on_store_error)
