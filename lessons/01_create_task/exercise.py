"""Lesson 1 exercise: how the chat view runs its Redis writes.

The view calls ``await b.run_write(coro)`` for the user's message and again for the bot's
reply (services/chat/views.py). Make the reply survive. Check with: lab lesson 1 --check
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import replace
from typing import Any

from services.chat.defects import Behaviour


async def run_write(coro: Coroutine[Any, Any, Any]) -> None:
    # "Don't make the user wait for the database": schedule the write and return at once.
    asyncio.create_task(coro)


def apply(b: Behaviour) -> Behaviour:
    return replace(b, run_write=run_write)
