"""fire_and_forget: writes are scheduled with ``asyncio.create_task`` and never awaited.

Under Flask each async view runs in ``asyncio.run``; when the view returns, tasks still pending
are cancelled with the loop. The reply's write, scheduled last, is cancelled before it runs:
the user saw the reply, Redis never got it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import replace
from typing import Any

from services.chat.defects import Behaviour, register


async def run_write(coro: Coroutine[Any, Any, Any]) -> None:
    asyncio.create_task(coro)  # the incident's line: nothing keeps, awaits or checks the task


@register("fire_and_forget", "writes via asyncio.create_task, never awaited")
def apply(b: Behaviour) -> Behaviour:
    return replace(b, run_write=run_write)
