"""One pool of browser contexts for both runners: a fixed number kept open (a broken one closed
and replaced, a trial waiting for a free one), or opened as trials need them and cleared as they
come back (one that cannot be cleared is closed, not reused)."""

from __future__ import annotations

import asyncio
from typing import Any

from lab.driver.slots import Pool, Slot


class Ctx:
    def __init__(self, n: int) -> None:
        self.n, self.closed = n, False

    async def close(self) -> None:
        self.closed = True


def _pool(size: int | None, reset: Any = None) -> tuple[Pool, list[Ctx]]:
    made: list[Ctx] = []

    async def make() -> Slot:
        made.append(Ctx(len(made)))
        return Slot(made[-1], None)  # type: ignore[arg-type]

    return Pool(make, size=size, reset=reset), made


def test_a_fixed_pool_replaces_a_broken_slot_and_makes_a_trial_wait_for_a_free_one() -> None:
    async def main() -> None:
        pool, made = _pool(2)
        await pool.fill()
        a, b = await pool.take(), await pool.take()
        third = asyncio.ensure_future(pool.take())  # both taken: the third trial waits
        assert len(made) == 2
        a.broken = True
        await pool.put(a)
        assert made[0].closed and len(made) == 3  # closed, and a new one in its place
        assert (await asyncio.wait_for(third, 5)).ctx is made[2]  # served by the replacement, not a fourth
        assert len(made) == 3
        await pool.put(b)
        assert (await pool.take()) is b  # a sound one is reused as it is

    asyncio.run(main())


def test_a_pool_opened_as_needed_reuses_what_could_be_cleared() -> None:
    cleared: list[int] = []

    async def reset(s: Slot) -> bool:
        cleared.append(s.ctx.n)  # type: ignore[attr-defined]
        return s.ctx.n != 1  # type: ignore[attr-defined]  # the second cannot be cleared

    async def main() -> None:
        pool, made = _pool(None, reset)
        a, b = await pool.take(), await pool.take()
        assert len(made) == 2
        await pool.put(a)
        await pool.put(b)
        assert cleared == [0, 1] and made[1].closed and not made[0].closed
        assert (await pool.take()) is a and (await pool.take()).ctx is made[2]  # then a new one
        await pool.close()

    asyncio.run(main())
