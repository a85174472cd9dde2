"""What every fault is: apply / remove / confirm, a context manager that always cleans up, and
a registry by name. One fault = one small module next to this one."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar, runtime_checkable

from lab.common.errors import LabError, UsageError
from lab.stack.toxiproxy import Toxiproxy, ToxiproxyError

if TYPE_CHECKING:
    from lab.stack import Stack


class FaultNotConfirmed(LabError):
    """The fault was applied but its effect could not be observed: the trial exercised nothing."""


@dataclass
class Targets:
    """What faults act on: the stack (processes or containers) and its Toxiproxy."""

    stack: "Stack"
    toxiproxy: Toxiproxy

    @classmethod
    def of(cls, stack: "Stack") -> "Targets":
        return cls(stack, Toxiproxy(stack.cfg.toxiproxy_url))


@runtime_checkable
class Paced(Protocol):
    """A fault whose experiment holds only if the conversation kept a pace (ttl_elapse: past
    2 x TTL, gaps under TTL/2). The runner asks it after every trial, from the backend's own
    write times; a reason makes the trial unknown (its preconditions did not hold)."""

    name: ClassVar[str]

    def check_pacing(
        self, write_times_s: list[float], expired_at_s: float | None = None, read_at_s: float | None = None
    ) -> str | None: ...


@dataclass
class Fault:
    """Base class. Subclasses are dataclasses whose fields are the fault's parameters."""

    name: ClassVar[str] = "?"
    summary: ClassVar[str] = ""
    # "trial": in place for the whole trial (all trials of a cell share it);
    # "send": armed around one send of the trial (at the plan's fault_turn), then healed --
    # outages and restarts, so the other turns can succeed and the cell can be exercised.
    window: ClassVar[str] = "trial"
    # Armed by one trial's own moment (drop at=write): its trials run one at a time.
    solo: ClassVar[bool] = False
    # Its moment is inside a reply (write_refused at=answer): the stand-in model streams the
    # replies of its trials slowly, so that the moment comes before the app's write.
    inside_reply: ClassVar[bool] = False
    # A one-send fault is armed before a turn in [earliest_turn, turns - 1].
    earliest_turn: ClassVar[int] = 1
    # The stack modes the fault can act on, and what to use instead on the others.
    modes: ClassVar[tuple[str, ...]] = ("native", "compose", "external")
    instead: ClassVar[str] = ""

    def check(self) -> None:
        """Refuse bad parameters before anything is sent anywhere (UsageError)."""

    def apply(self, t: Targets) -> None:
        raise NotImplementedError

    def remove(self, t: Targets) -> None:
        raise NotImplementedError

    def confirm(self, t: Targets) -> str:
        """Evidence that the fault is in effect; raise FaultNotConfirmed otherwise."""
        raise NotImplementedError

    def headers(self) -> dict[str, str]:
        """Lab headers the browser must send while this fault is on (e.g. a short TTL)."""
        return {}

    def step_delay_ms(self) -> float:
        """The most this fault adds to one Redis round trip of the app while it is on: one step of a
        chain of writes takes this long, so a key that stayed the same for less time may still be
        waiting for its next write (lab.investigate.evidence.keys sizes its quiet window by it)."""
        return 0.0

    def params(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def describe(self) -> str:
        args = ", ".join(f"{k}={v}" for k, v in self.params().items())
        return f"{self.name}({args})"

    @contextmanager
    def on(self, t: Targets) -> Iterator[str]:
        """Apply, confirm, yield the evidence; remove on the way out, whatever happened.

        If apply or confirm fails halfway, what was applied is undone before re-raising."""
        self.check()
        check_mode(type(self), t.stack.mode)
        try:
            self.apply(t)
            evidence = self.confirm(t)
        except BaseException:
            _quietly(self.remove, t)
            raise
        try:
            yield evidence
        finally:
            self.remove(t)


def _quietly(fn: Callable[[Targets], None], t: Targets) -> None:
    try:
        fn(t)
    except Exception:  # undoing a half-applied fault: the original error is the one to report
        pass


@dataclass
class ToxicFault(Fault):
    """A fault that is one Toxiproxy toxic on one proxy."""

    toxic_type: ClassVar[str] = ""

    def attributes(self) -> dict[str, int]:
        raise NotImplementedError

    def _proxy(self) -> str:
        return str(getattr(self, "proxy", "redis"))

    def _stream(self) -> str:
        return str(getattr(self, "stream", "downstream"))

    def check(self) -> None:
        from lab.stack.toxiproxy import check_toxic

        check_toxic(self.toxic_type, self._stream(), self.attributes(), 1.0)

    def apply(self, t: Targets) -> None:
        self._toxic_name = f"lab-{self.name}-{uuid.uuid4().hex[:8]}"
        t.toxiproxy.add_toxic(self._proxy(), self._toxic_name, self.toxic_type, self._stream(), self.attributes())

    def remove(self, t: Targets) -> None:
        name: str | None = getattr(self, "_toxic_name", None)
        if name is None:
            return
        try:
            t.toxiproxy.remove_toxic(self._proxy(), name)
        except ToxiproxyError as exc:
            if "not found" not in str(exc):
                raise
        del self._toxic_name

    def confirm(self, t: Targets) -> str:
        listed = t.toxiproxy.toxic(self._proxy(), self._toxic_name)
        if listed is None or listed.get("attributes") != self.attributes():
            raise FaultNotConfirmed(
                f"{self.describe()}: toxic not listed as sent on proxy {self._proxy()!r} (got {listed!r})"
            )
        return f"toxic {self.toxic_type} {self._stream()} {listed['attributes']} listed on {self._proxy()}"


def check_mode(cls: type[Fault], mode: str) -> None:
    """Refuse a fault the stack's mode cannot do (UsageError: exit 2), naming what to use."""
    if mode in cls.modes:
        return
    needs = "Docker (compose mode)" if cls.modes == ("compose",) else f"the {' or '.join(cls.modes)} stack"
    hint = f"run it with --mode {cls.modes[0]} (make chaos MODE={cls.modes[0]})"
    if cls.instead:
        hint += f"; on the {mode} stack use {cls.instead}"
    raise UsageError(f"fault {cls.name!r} needs {needs}; the {mode} stack cannot do it", hint)


REGISTRY: dict[str, type[Fault]] = {}
F = TypeVar("F", bound=type[Fault])


def register(name: str) -> Callable[[F], F]:
    def deco(cls: F) -> F:
        if name in REGISTRY:
            raise ValueError(f"fault {name!r} registered twice")
        cls.name = name
        REGISTRY[name] = cls
        return cls

    return deco


def make(name: str, **params: Any) -> Fault:
    """A fault by name, its parameters checked; errors name the valid values."""
    cls = REGISTRY.get(name)
    if cls is None:
        raise UsageError(f"unknown fault {name!r}", f"valid faults: {', '.join(sorted(REGISTRY))}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(params) - set(fields))
    if unknown:
        raise UsageError(
            f"fault {name!r} has no parameter {', '.join(unknown)}", f"its parameters: {', '.join(fields) or '(none)'}"
        )
    for key, value in params.items():
        want = fields[key].type
        if want in ("int", int) and not (isinstance(value, int) and not isinstance(value, bool)):
            raise UsageError(f"{name}.{key}={value!r} must be an integer")
        if want in ("bool", bool) and not isinstance(value, bool):
            raise UsageError(f"{name}.{key}={value!r} must be true or false")
    fault = cls(**params)
    fault.check()
    return fault
