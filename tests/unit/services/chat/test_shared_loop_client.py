"""shared_loop_client's global client: one per process, replaced only once it is wedged (its
pool lock bound to a closed loop with waiters left in it). No connection is made: the lock is
driven directly, as a request whose loop died while waiting on it leaves it."""

from __future__ import annotations

import asyncio

from services.chat.defects import shared_loop_client as slc

URL = "redis://127.0.0.1:1/0"


def _wedge(lock: asyncio.Lock) -> None:
    """A request holds the lock, another waits on it, and their loop closes under them."""
    loop = asyncio.new_event_loop()

    async def hold() -> None:
        await lock.acquire()
        waiter = asyncio.ensure_future(lock.acquire())  # the waiter, stranded on purpose
        assert not waiter.done()
        await asyncio.sleep(0)  # a yield, so the waiter enters the lock's queue

    loop.run_until_complete(hold())
    loop.set_exception_handler(lambda _loop, _ctx: None)  # the stranded waiter, as in production
    loop.close()


def test_one_client_per_process_until_it_is_wedged() -> None:
    first = slc.shared_client(URL, None)[0]
    assert slc.shared_client(URL, None)[0] is first and not slc.wedged(first)
    _wedge(first.connection_pool._lock)
    assert slc.wedged(first)
    second = slc.shared_client(URL, None)[0]
    assert second is not first and slc.shared_client(URL, None)[0] is second
