"""Lesson 1 solution: await the write.

Under Flask each async view runs in its own event loop (``asyncio.run``); tasks still pending
when the view returns are cancelled with the loop. Awaiting costs the user one Redis round trip
and means the reply is acknowledged only once it is stored -- and a failed write reaches the
view's error handling instead of vanishing.
"""

from __future__ import annotations

from collections.abc import Coroutine
from dataclasses import replace
from typing import Any

from services.chat.defects import Behaviour


async def run_write(coro: Coroutine[Any, Any, Any]) -> None:
    await coro


def apply(b: Behaviour) -> Behaviour:
    return replace(b, run_write=run_write)
