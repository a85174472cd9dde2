"""The loop of pooled trials (lab.runner.groups.pooled): never more than ``width`` trials hold a
place; a trial that lets its place go (what is left of it only waits) lets the next one start
while it finishes; a source that grows as trials end is asked again; a trial's error ends the
group and cancels what still runs."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from lab.runner.groups import Release, pooled
from tests.helpers import run_async


def _source(items: list[int]) -> Callable[[], int | None]:
    return lambda: items.pop(0) if items else None


def test_never_more_than_width_at_once_and_every_trial_runs() -> None:
    live, peak, ran = 0, 0, []

    async def run(item: int, release: Release) -> None:
        nonlocal live, peak
        live += 1
        peak = max(peak, live)
        await asyncio.sleep(0)  # (a yield: the others get their turn)
        live -= 1
        ran.append(item)

    run_async(pooled(_source(list(range(9))), 3, run))
    assert sorted(ran) == list(range(9)) and peak == 3


def test_a_released_place_starts_the_next_trial_while_the_first_still_waits() -> None:
    """Width 1: the first trial waits for the second to have started -- possible only because
    it let its place go (held to its end, the group would never finish)."""
    second_started = asyncio.Event()
    order: list[str] = []

    async def run(item: int, release: Release) -> None:
        if item == 0:
            release()
            release()  # twice is once: the width stays 1
            await asyncio.wait_for(second_started.wait(), 5)
            order.append("first ended")
        else:
            order.append(f"{item} started")
            second_started.set()

    run_async(pooled(_source([0, 1, 2]), 1, run))
    assert order == ["1 started", "2 started", "first ended"]


def test_a_source_that_grows_once_trials_end_is_asked_again() -> None:
    handed, ended = 0, []

    def take() -> int | None:
        """A trial at a time, the next only once every one handed out has ended."""
        nonlocal handed
        if handed < 3 and len(ended) == handed:
            handed += 1
            return handed - 1
        return None

    async def run(item: int, release: Release) -> None:
        release()  # released early: more is asked for only once this trial has ended
        await asyncio.sleep(0)
        ended.append(item)

    run_async(pooled(take, 2, run))
    assert ended == [0, 1, 2]


def test_an_error_ends_the_group_and_cancels_the_rest() -> None:
    cancelled = []

    async def run(item: int, release: Release) -> None:
        if item == 0:
            release()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.append(item)
                raise
        raise RuntimeError(f"trial {item} broke")

    with pytest.raises(RuntimeError, match="trial 1 broke"):
        run_async(pooled(_source([0, 1, 2, 3]), 1, run))
    assert cancelled == [0]
