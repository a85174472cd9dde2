"""drop (lab.faults.drop): at=write's toxics, in the order Toxiproxy needs them, and its bad
parameters refused before anything is sent."""

from __future__ import annotations

from typing import Any

import pytest

from lab.commands.chaos import check_not_probe_only
from lab.common.errors import UsageError
from lab.faults.base import Targets
from lab.faults.drop import Drop


class Recorder:
    """A Toxiproxy that records what is asked of it, and lists what was added."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.listed: dict[str, dict[str, Any]] = {}

    def add_toxic(
        self, proxy: str, name: str, kind: str, stream: str, attrs: dict[str, int], toxicity: float = 1.0
    ) -> None:
        self.calls.append(("add", kind, stream, toxicity))
        self.listed[name] = {"name": name, "type": kind, "attributes": attrs, "toxicity": toxicity}

    def update_toxic(self, proxy: str, name: str, toxicity: float) -> None:
        self.calls.append(("update", self.listed[name]["type"], toxicity))

    def remove_toxic(self, proxy: str, name: str) -> None:
        self.calls.append(("remove", self.listed.pop(name)["type"]))

    def toxic(self, proxy: str, name: str) -> dict[str, Any] | None:
        return self.listed.get(name)


def test_at_write_holds_the_replies_before_a_reset_that_waits_at_toxicity_zero() -> None:
    """The hold first, the reset after it in the chain (the held replies meet it), at toxicity 0;
    the trigger changes only the reset's toxicity (adding a toxic would flush what the hold
    holds); the reset goes first on the way out (removing the hold releases what it holds)."""
    tp, fault = Recorder(), Drop(at="write", hold_ms=150)
    t = Targets(None, tp)  # type: ignore[arg-type]
    fault.check()
    fault.apply(t)
    evidence = fault.confirm(t)
    fault.trigger(t, 1.0)
    fault.trigger(t, 0.0)
    fault.remove(t)
    assert tp.calls == [
        ("add", "latency", "downstream", 1.0),
        ("add", "reset_peer", "downstream", 0.0),
        ("update", "reset_peer", 1.0),
        ("update", "reset_peer", 0.0),
        ("remove", "reset_peer"),
        ("remove", "latency"),
    ]
    # The hold released early (once the reset is lowered): removed once, not again at the end.
    tp.calls.clear()
    fault.apply(t)
    fault.trigger(t, 0.0)
    fault.release_hold(t)
    fault.remove(t)
    assert [c[:2] for c in tp.calls] == [
        ("add", "latency"),
        ("add", "reset_peer"),
        ("update", "reset_peer"),
        ("remove", "latency"),
        ("remove", "reset_peer"),
    ]
    assert "toxicity 0 until the write, after latency 150 ms downstream" in evidence
    assert fault.solo and not Drop().solo and fault.step_delay_ms() == 150.0


def test_at_send_is_the_one_reset_toxic_it_always_was() -> None:
    tp = Recorder()
    t = Targets(None, tp)  # type: ignore[arg-type]
    fault = Drop()
    fault.apply(t)
    fault.remove(t)
    assert tp.calls == [("add", "reset_peer", "downstream", 1.0), ("remove", "reset_peer")]


@pytest.mark.parametrize(
    "kw, says",
    [
        ({"at": "reply"}, "at='reply' is not one of send, write"),
        ({"at": "write", "one_shot": False}, "at=write resets the reply to one send's write"),
        ({"at": "write", "stream": "upstream"}, "at=write resets the reply to one send's write"),
    ],
)
def test_bad_parameters_are_refused_naming_the_valid_ones(kw: dict[str, Any], says: str) -> None:
    with pytest.raises(UsageError, match=says):
        Drop(**kw).check()


def test_lab_chaos_refuses_at_write() -> None:
    """lab chaos's service has no store's record to raise the reset by: refused, not run blind."""
    with pytest.raises(UsageError, match="lab investigate's"):
        check_not_probe_only({"at": "write"})
    check_not_probe_only({"at": "send"})
