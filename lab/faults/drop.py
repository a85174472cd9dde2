"""drop: resets the connection (TCP RST) at the first data in one direction.

``downstream`` cuts Redis's reply after the command was applied (the outcome is unknown to the
client); ``upstream`` cuts the command before Redis sees it. ``one_shot`` arms the drop for one
send of a trial only (the schedule applies it just before that send and removes it right after);
otherwise it stays for the whole trial.

``at = "write"`` (lab investigate, one-shot, downstream): the reset lands on the reply to the
send's first write of the conversation's key, whatever the app reads first. The replies are held
``hold_ms`` (a latency toxic) while the reset, listed after it with toxicity 0, waits; the trial
raises its toxicity to 1 the moment the store's record shows the write (``trigger``) and lowers
it once the held reply has met it (``untrigger``) -- so a client's retry, whose reply is held in
turn, gets through. Toxiproxy re-draws a toxic's toxicity on every link when it is updated, and
updating the reset does not disturb the latency before it (adding a toxic would flush what the
latency holds). A toxic acts on the whole proxy: such trials run one at a time (``solo``)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from lab.common.errors import UsageError
from lab.faults.base import FaultNotConfirmed, Targets, ToxicFault, register

AT = ("send", "write")


@register("drop")
@dataclass
class Drop(ToxicFault):
    summary = "reset the connection at the first data (reset_peer), one send or the whole trial"
    toxic_type = "reset_peer"
    stream: str = "downstream"
    one_shot: bool = True
    timeout_ms: int = 0
    proxy: str = "redis"
    at: str = "send"
    # at = "write": how long each reply of the send is held, for the reset to be raised in time
    # (the record shows the write within ~5-10 ms; each of the send's round trips costs this much)
    hold_ms: int = 150

    # A property where the other faults have a class constant: one_shot decides it per instance
    # (mypy cannot see a property read like the ClassVar it overrides).
    @property
    def window(self) -> str:  # type: ignore[override]
        return "send" if self.one_shot else "trial"

    @property
    def solo(self) -> bool:  # type: ignore[override]
        """Its trials one at a time: one trial's write raises the reset for the whole proxy."""
        return self.at == "write"

    def attributes(self) -> dict[str, int]:
        return {"timeout": self.timeout_ms}

    def check(self) -> None:
        super().check()
        if self.at not in AT:
            raise UsageError(f"drop: at={self.at!r} is not one of {', '.join(AT)}", "at=send (default) or at=write")
        if self.at == "write" and (not self.one_shot or self.stream != "downstream" or self.proxy != "redis"):
            raise UsageError(
                "drop: at=write resets the reply to one send's write",
                "use it with one_shot=true, stream=downstream on the redis proxy",
            )

    def step_delay_ms(self) -> float:
        return float(self.hold_ms) if self.at == "write" else 0.0

    def apply(self, t: Targets) -> None:
        if self.at != "write":
            return super().apply(t)
        name = f"lab-drop-{uuid.uuid4().hex[:8]}"
        self._hold_name = f"{name}-hold"
        t.toxiproxy.add_toxic(self._proxy(), self._hold_name, "latency", "downstream", {"latency": self.hold_ms})
        self._toxic_name = name  # after the hold in the chain: the held replies meet it
        t.toxiproxy.add_toxic(self._proxy(), name, self.toxic_type, "downstream", self.attributes(), toxicity=0.0)

    def remove(self, t: Targets) -> None:
        super().remove(t)  # the reset first: removing the hold releases what it holds
        self.release_hold(t)

    def release_hold(self, t: Targets) -> None:
        """at = "write": the replies no longer held (once the reset is lowered, or on removal)."""
        hold: str | None = getattr(self, "_hold_name", None)
        if hold is not None:
            t.toxiproxy.remove_toxic(self._proxy(), hold)
            del self._hold_name

    def confirm(self, t: Targets) -> str:
        listed = super().confirm(t)
        if self.at != "write":
            return listed
        hold = t.toxiproxy.toxic(self._proxy(), self._hold_name)
        if hold is None or hold.get("attributes", {}).get("latency") != self.hold_ms:
            raise FaultNotConfirmed(f"{self.describe()}: the hold (latency {self.hold_ms} ms) is not listed")
        return f"{listed}, toxicity 0 until the write, after latency {self.hold_ms} ms downstream"

    def trigger(self, t: Targets, toxicity: float = 1.0) -> None:
        """at = "write": the reset on (1.0) or off again (0.0) for every link of the proxy."""
        t.toxiproxy.update_toxic(self._proxy(), self._toxic_name, toxicity)
