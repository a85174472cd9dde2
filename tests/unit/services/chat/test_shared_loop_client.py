"""shared_loop_client's global client: one per process, replaced only once it is wedged (its
pool lock bound to a closed loop, with or without waiters left in it). No connection is made: the lock is
driven directly, as a request whose loop died while waiting on it leaves it."""

from __future__ import annotations

import asyncio

import pytest

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


def _bind_and_close(lock: asyncio.Lock) -> None:
    """Two requests contend for the lock (binding it to their loop), both finish, the loop closes."""
    loop = asyncio.new_event_loop()

    async def contend() -> None:
        await lock.acquire()
        waiter = asyncio.ensure_future(lock.acquire())
        await asyncio.sleep(0)
        lock.release()
        await waiter
        lock.release()

    loop.run_until_complete(contend())
    loop.close()


def test_a_lock_bound_to_a_closed_loop_is_wedged_without_waiters() -> None:
    """No waiter is left, but the next contended acquire in another loop fails: wedged too."""
    client = slc.store.new_client(URL)
    assert not slc.wedged(client)
    _bind_and_close(client.connection_pool._lock)
    lock = client.connection_pool._lock
    assert not lock._waiters and slc.wedged(client)

    async def next_request() -> None:  # another request's loop, and it has to wait
        await lock.acquire()
        try:
            await asyncio.wait_for(lock.acquire(), 1)
        finally:
            lock.release()

    with pytest.raises(RuntimeError, match="bound to a different event loop"):
        asyncio.run(next_request())
