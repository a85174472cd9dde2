"""Lesson 5 solution: a failed write fails the request.

Acknowledge only what is stored: raise, so the view answers 503 and the page marks the message
"not saved" with a retry button. (The user's retry reuses the message id, so it cannot store the
turn twice.)
"""

from __future__ import annotations

from dataclasses import replace

from services.chat.defects import Behaviour
from services.chat.errors import ApiError


def on_store_error(exc: BaseException, what: str) -> None:
    raise ApiError(503, "store_unavailable", f"{what} failed: {type(exc).__name__}: {exc}")


def apply(b: Behaviour) -> Behaviour:
    return replace(b, on_store_error=on_store_error)
