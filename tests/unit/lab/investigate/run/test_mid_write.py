"""The in_flight reload's trigger (lab.investigate.run.mid_write): the app's first change of the
conversation's key since the send left, by the store's record -- a write or a removal, never a
read, never the lab's own commands, never another key; and the trials it cannot place (no key,
no record) named as such rather than run as a pass."""

from __future__ import annotations

from lab.investigate.evidence.store import StoreMonitor
from lab.investigate.run.mid_write import first_change, not_testable

T0 = 1_800_000_000.0


def monitor(*commands: tuple[float, str, list[bytes]]) -> StoreMonitor:
    m = StoreMonitor("redis://127.0.0.1:1/0")  # never started: commands handed to it as MONITOR would
    m.lab_clients.add("127.0.0.1:9")
    for t, client, args in commands:
        m._command(T0 + t, 0, client, args)
    return m


def test_the_first_change_is_a_write_or_a_removal_of_the_key_by_the_app() -> None:
    m = monitor(
        (0.1, "127.0.0.1:5", [b"LRANGE", b"chat:a", b"0", b"-1"]),  # a read changes nothing
        (0.2, "127.0.0.1:9", [b"DEL", b"chat:a"]),  # the lab's own
        (0.3, "127.0.0.1:5", [b"RPUSH", b"chat:b", b"x"]),  # another conversation
        (0.4, "127.0.0.1:5", [b"DEL", b"chat:a"]),  # the rewrite begins
        (0.7, "127.0.0.1:5", [b"RPUSH", b"chat:a", b"u1"]),
    )
    assert first_change(m, "chat:a", T0) == T0 + 0.4
    assert first_change(m, "chat:a", T0 + 0.5) == T0 + 0.7  # since the send left, not before
    assert first_change(m, "chat:a", T0 + 0.8) is None


def test_a_trial_without_a_key_or_a_record_cannot_place_its_reload() -> None:
    m = monitor()
    assert not_testable(m, "chat:a") is None
    assert "[redis] key" in (not_testable(m, None) or "")
    m.error = "NOPERM this user has no permissions to run the 'monitor' command"
    assert "NOPERM" in (not_testable(m, "chat:a") or "")
    assert "no record" in (not_testable(None, "chat:a") or "")


def test_without_a_record_the_reload_comes_half_the_latency_after_the_send_left() -> None:
    """No store's record or no key to follow: the page reloads while the send is in flight, half
    the injected latency after it left; a send answered sooner missed the window (unknown)."""
    import asyncio

    from lab.investigate.run.mid_write import _until_half_latency
    from lab.model.history import Trial

    t = Trial("t", fault="latency", fault_params={"latency_ms": 300}, refresh="in_flight", turns=3)

    async def race(answer_s: float) -> str | None:
        task = asyncio.create_task(asyncio.sleep(answer_s))
        try:
            return await _until_half_latency(task, t)  # type: ignore[arg-type]
        finally:
            task.cancel()

    assert asyncio.run(race(5.0)) is None  # still in flight at 150 ms: reload
    assert "window missed" in (asyncio.run(race(0.0)) or "")
