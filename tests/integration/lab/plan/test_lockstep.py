"""Lockstep on the real Toxiproxy: a one-send fault on before the group's sends, or -- a window
sweep's fault_onset_ms -- the sends first and the fault on that long after them."""

from __future__ import annotations

import asyncio
import time

import pytest
import redis

from lab.faults import Targets, make
from lab.plan.lockstep import Lockstep
from tests.helpers import run_async


def _proxy_enabled(targets: Targets) -> bool:
    return bool(targets.toxiproxy.proxies()["redis"]["enabled"])


def test_a_late_fault_comes_on_after_its_onset_and_is_healed_after_it(targets: Targets) -> None:
    step = Lockstep(2, make("down"), targets)
    seen: dict[str, object] = {}

    async def trial(i: int) -> None:
        t0 = time.monotonic()
        assert await step.arm(onset_s=0.3)
        if i == 0:
            seen["at_arm"] = _proxy_enabled(targets)  # the sends go out before the fault
        assert await step.onset()
        if i == 0:
            seen["waited_s"] = time.monotonic() - t0
            seen["at_onset"] = _proxy_enabled(targets)
        await step.heal()

    async def both() -> None:
        await asyncio.gather(trial(0), trial(1))

    run_async(both())
    step.release()
    assert seen["at_arm"] is True and seen["at_onset"] is False
    assert float(seen["waited_s"]) >= 0.3  # the onset took effect (a lower bound only)
    assert step.evidence and "ConnectionRefusedError" in step.evidence
    assert _proxy_enabled(targets)


def test_without_an_onset_the_fault_is_on_when_arm_returns(targets: Targets, via_proxy) -> None:  # type: ignore[no-untyped-def]
    step = Lockstep(1, make("down"), targets)

    async def trial() -> None:
        assert await step.arm()
        with pytest.raises(redis.exceptions.ConnectionError):
            via_proxy().ping()
        await step.heal()

    run_async(trial())
    step.release()
    assert via_proxy().ping() is True
