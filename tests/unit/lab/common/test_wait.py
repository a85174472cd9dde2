"""lab.common.wait: one bookkeeping for the sync and the async wait (values, deadlines, aborts, wake-ups)."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from lab.common.errors import NotReady
from lab.common.wait import dropped, wait_until, wait_until_async


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_returns_the_checks_first_truthy_value(mode: str) -> None:
    calls = itertools.count(1)

    def check() -> str | None:
        n = next(calls)
        if n == 2:
            raise ConnectionError("refused")  # transient: counts as "not yet"
        return "up" if n >= 3 else None

    if mode == "sync":
        assert wait_until(check, what="x", timeout_s=5, interval_s=0) == "up"
    else:
        assert asyncio.run(wait_until_async(check, what="x", timeout_s=5, interval_s=0)) == "up"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_deadline_names_the_last_attempt(mode: str) -> None:
    def check() -> None:
        raise ConnectionError("refused")

    with pytest.raises(NotReady, match=r"redis: not ready after 0.05 s; last check: ConnectionError: refused"):
        if mode == "sync":
            wait_until(check, what="redis", timeout_s=0.05, interval_s=0.01)
        else:
            asyncio.run(wait_until_async(check, what="redis", timeout_s=0.05, interval_s=0.01))


def test_abort_stops_at_once_with_its_reason() -> None:
    with pytest.raises(NotReady, match="backend: exited; last check: not ready"):
        asyncio.run(wait_until_async(lambda: None, what="backend", timeout_s=60, abort=lambda: "exited"))


def test_async_wait_is_woken_not_polled() -> None:
    """With ``wake``, the check runs again only when woken (here: three wake-ups)."""

    async def main() -> int:
        ready = asyncio.Event()
        woken = 0

        async def wake(max_s: float) -> None:
            nonlocal woken
            woken += 1
            if woken == 3:
                ready.set()
            await asyncio.sleep(0)

        await wait_until_async(ready.is_set, what="event", timeout_s=5, wake=wake)
        return woken

    assert asyncio.run(main()) == 3


def test_in_own_thread_returns_the_result_and_passes_the_exception_on() -> None:
    import threading

    from lab.common.wait import in_own_thread

    main = threading.get_ident()
    assert in_own_thread(lambda: threading.get_ident()) != main

    def boom() -> None:
        raise KeyError("x")

    with pytest.raises(KeyError):
        in_own_thread(boom)


def test_a_dropped_task_is_cancelled_if_running_and_its_failure_taken() -> None:
    """A send's task left behind by a failed step: cancelled, or its exception retrieved -- the
    loop never reports "Task exception was never retrieved"."""

    async def main() -> tuple[bool, bool]:
        gate = asyncio.Event()
        running = asyncio.ensure_future(gate.wait())

        async def fail() -> None:
            raise RuntimeError("the page closed")

        failed = asyncio.ensure_future(fail())
        await asyncio.wait([failed])  # both started: one waiting, one failed
        await dropped(running)
        await dropped(failed)
        return running.cancelled(), failed.exception() is not None

    unretrieved: list[object] = []
    loop = asyncio.new_event_loop()
    loop.set_exception_handler(lambda _loop, ctx: unretrieved.append(ctx))
    try:
        assert loop.run_until_complete(main()) == (True, True)
    finally:
        loop.close()
    assert unretrieved == []
