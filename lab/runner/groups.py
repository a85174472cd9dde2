"""Trials under one fault: the loop every run's trials go through, `lab chaos`'s (lab.runner.runner)
and `lab investigate`'s (lab.investigate.run.groups) alike. Two shapes:

- ``pooled``: nothing to arm and heal around a group of trials -- no fault, or one held on for
  the whole run of them -- so a trial starts as soon as another ends (a group would wait for its
  slowest trial), or as soon as another only waits (a black box's settled read).
- ``in_lockstep``: a fault armed and healed around each group of trials (a one-send fault; an
  investigation's fault on while its trials converse, healed before they settle): groups one
  after another, each under one Lockstep (lab.plan.lockstep) -- the link faulted once for all.

Both ask for their work as they go, so a run may add trials once some are in (an investigation
replaces its unknown trials)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from lab.faults import Fault, Targets
from lab.plan.lockstep import Lockstep

T = TypeVar("T")
R = TypeVar("R")
# Given to each pooled trial: its place goes to the next trial (idempotent; at its end at the latest).
Release = Callable[[], None]


async def pooled(take: Callable[[], T | None], width: int, run: Callable[[T, Release], Awaitable[object]]) -> None:
    """``width`` trials at a time, each started as soon as another ends -- or lets its place go
    (``release``, given to each trial: the part of it that loads the system is done, and what is
    left only waits, as a black box's settled read does). ``take`` hands out the next trial (None:
    none now); it is asked again whenever a place frees up or a trial ends, so it may hand out
    more once some are in. Ends when nothing runs and ``take`` has nothing."""
    places = asyncio.Semaphore(max(1, width))
    changed = asyncio.Condition()
    running = 0
    tasks: list[asyncio.Task[None]] = []

    async def one(item: T) -> None:
        nonlocal running
        held = True

        def release() -> None:
            nonlocal held
            if held:
                held = False
                places.release()

        try:
            await run(item, release)
        finally:
            release()
            async with changed:
                running -= 1
                changed.notify_all()

    try:
        while True:
            await places.acquire()
            for done in [t for t in tasks if t.done()]:
                tasks.remove(done)
                done.result()  # a trial's error ends the group, as it always did
            async with changed:
                while (item := take()) is None and running:
                    await changed.wait()  # a trial still running may leave more to do
                if item is None:
                    break
                running += 1
            tasks.append(asyncio.ensure_future(one(item)))
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def in_lockstep(
    take: Callable[[], list[T]],
    fault: Fault,
    targets: Targets,
    run: Callable[[T, Lockstep], Awaitable[R]],
    after: Callable[[list[T], list[R], Lockstep], None],
) -> None:
    """Groups of trials one after another (``take``: the next group, [] when done), each group's
    trials side by side under one Lockstep of ``fault``; ``after`` sees each group's results and
    its Lockstep (what the fault's confirmation said) before the next group is taken."""
    while group := take():
        step = Lockstep(len(group), fault, targets)
        try:
            got = list(await asyncio.gather(*(run(x, step) for x in group)))
        finally:
            step.release()  # never left armed for a generator's finalizer (a signal, an error)
        after(group, got, step)
