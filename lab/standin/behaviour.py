"""How the stand-in answers one call: the time to its first token, the delay between tokens, the
reply's length and a fault -- set by the lab per trial, matched to a call by a text its last
user message contains (the lab's probes carry their trial's id)."""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, fields
from typing import Any

# A fault, as the provider shows it: rate_limit (429 with Retry-After), server_error (500),
# overloaded (Anthropic's 529, 503 elsewhere), cut (a stream stops after cut_after tokens without
# its final event: the connection closes mid-body), no_first_token (headers, then nothing for
# hold_ms: past the app's timeout).
FAULTS = ("rate_limit", "server_error", "overloaded", "cut", "no_first_token")
MAX_DELAY_MS = 120_000  # a held connection or a slow stream still ends: the lab's runs are bounded


class BehaviourError(ValueError):
    """A plan the stand-in cannot follow; the message names the bad value and the valid ones."""


@dataclass(frozen=True)
class Behaviour:
    ttft_ms: int = 0  # before the first token (a stream) or the whole answer
    token_ms: int = 0  # between tokens of a stream
    tokens: int | None = None  # the reply's length in tokens (None: as the reply comes)
    fault: str | None = None
    cut_after: int = 2  # cut: tokens sent before the stream stops
    retry_after_s: int = 1  # rate_limit's Retry-After
    hold_ms: int = 30_000  # no_first_token: how long the connection is held
    # The plan answers only the first N calls of each message (None: every call), then the
    # calls go on as if it were not there: a provider that fails once and recovers, which an
    # app that retries gets past.
    times: int | None = None

    def __post_init__(self) -> None:
        if self.fault is not None and self.fault not in FAULTS:
            raise BehaviourError(f"fault {self.fault!r}: valid faults are {', '.join(FAULTS)}")
        for name in ("ttft_ms", "token_ms", "hold_ms", "cut_after", "retry_after_s"):
            value = getattr(self, name)
            if not isinstance(value, int) or not 0 <= value <= MAX_DELAY_MS:
                raise BehaviourError(f"{name}={value!r}: give a whole number from 0 to {MAX_DELAY_MS}")
        if self.times is not None and (not isinstance(self.times, int) or not 1 <= self.times <= 100):
            raise BehaviourError(f"times={self.times!r}: give a whole number from 1 to 100, or leave it out")
        if self.tokens is not None and (not isinstance(self.tokens, int) or not 1 <= self.tokens <= 4096):
            raise BehaviourError(f"tokens={self.tokens!r}: give a whole number from 1 to 4096, or leave it out")

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Behaviour:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise BehaviourError(f"unknown field(s) {', '.join(unknown)}: valid fields are {', '.join(sorted(known))}")
        return cls(**data)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


class Plans:
    """The behaviours the lab has set, each for the calls whose last user message contains its
    match; the latest set wins; a call no plan matches gets the default (at once, whole)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._plans: list[tuple[str, Behaviour]] = []
        self._used: dict[tuple[str, str], int] = {}  # (match, message) -> calls it answered

    def set(self, match: str, behaviour: Behaviour) -> None:
        if not match:
            raise BehaviourError("match: give a non-empty text the call's last user message contains")
        with self._lock:
            self._plans = [(m, b) for m, b in self._plans if m != match] + [(match, behaviour)]
            self._used = {k: n for k, n in self._used.items() if k[0] != match}

    def clear(self, match: str | None = None) -> None:
        """Every plan, or the one set for ``match``."""
        with self._lock:
            self._plans = [] if match is None else [(m, b) for m, b in self._plans if m != match]
            self._used = {k: n for k, n in self._used.items() if match is not None and k[0] != match}

    def find(self, last_user: str) -> tuple[str | None, Behaviour]:
        with self._lock:
            for match, behaviour in reversed(self._plans):
                if match not in last_user:
                    continue
                if behaviour.times is not None:
                    used = self._used.get((match, last_user), 0)
                    if used >= behaviour.times:
                        continue  # spent for this message: the provider has recovered
                    self._used[(match, last_user)] = used + 1
                return match, behaviour
        return None, Behaviour()
