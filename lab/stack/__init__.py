"""Bring the topology up and down: browser -> chat proxy -> backend -> redis proxy -> Redis."""

from __future__ import annotations

from typing import Protocol

from lab.config import MODES, LabConfig
from lab.errors import UsageError


class Stack(Protocol):
    """What everything above the stack relies on, whichever way it was brought up."""

    mode: str
    cfg: LabConfig

    def up(self) -> dict[str, object]: ...
    def down(self) -> list[str]: ...
    def status(self) -> dict[str, object]: ...


def for_mode(mode: str, cfg: LabConfig | None = None) -> Stack:
    if mode not in MODES:
        raise UsageError(f"unknown mode {mode!r}", f"valid modes: {', '.join(MODES)}")
    cfg = cfg or LabConfig.from_env()
    if mode == "native":
        from lab.stack.native import NativeStack
        return NativeStack(cfg)
    from lab.stack.compose import ComposeStack
    return ComposeStack(cfg)  # type: ignore[return-value]
