"""Bring the topology up and down: browser -> chat proxy -> backend -> redis proxy -> Redis.

The processes as local ones (native, procs, ports) or as Docker Compose services (compose,
engine), the backend's events (events), the proxies from toxiproxy.json (topology), the
Toxiproxy client (toxiproxy) and which code the backend runs (fingerprint).

May import: lab.common.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from lab.common.config import MODES, LabConfig
from lab.common.errors import UsageError


class Stack(Protocol):
    """What everything above the stack relies on, whichever way it was brought up.

    The process/container faults (lab.faults.redis_pause, redis_restart, backend_restart) act
    only through the verbs below, so one fault module serves both modes: signals and processes
    natively, the docker SDK on compose. ``instance`` names what runs now (a pid, a container's
    start time) so a fault can prove a restart happened instead of assuming it."""

    mode: str
    cfg: LabConfig
    run_dir: Path

    keep: bool  # ``with stack:`` leaves a stack it started running (lab.stack.lifecycle)

    def up(self, timeout_s: float = ...) -> dict[str, Any]: ...
    def down(self) -> list[str]: ...
    def __enter__(self) -> "Stack": ...
    def __exit__(self, *exc: object) -> None: ...
    def status(self) -> dict[str, Any]: ...
    @property
    def backend_log(self) -> Path: ...

    def instance(self, service: str) -> str: ...
    def pause_redis(self) -> None: ...
    def resume_redis(self) -> None: ...
    def redis_paused(self) -> str | None: ...
    def restart_redis(self, *, durable: bool) -> str: ...
    def restart_backend(self) -> str: ...
    def heal(self) -> None: ...


def for_mode(mode: str, cfg: LabConfig | None = None, model: bool = False) -> Stack:
    """The stack of ``mode``; ``model``: the built-in backend takes its replies from the stand-in
    model (lab.stack.model_link, which the caller opens beside the stack) -- native only."""
    if mode not in MODES:
        raise UsageError(f"unknown mode {mode!r}", f"valid modes: {', '.join(MODES)}")
    if model and mode != "native":
        raise UsageError(
            f"--model with --mode {mode}: the built-in service takes its replies from the stand-in on the native stack",
            "use --mode native; a compose or running app gets the stand-in from lab investigate with [model] "
            "in its spec (docs/model.md)",
        )
    cfg = cfg or LabConfig.from_env()
    if mode == "native":
        from lab.stack.native import NativeStack

        from lab.stack.model_link import backend_env

        return NativeStack(cfg, backend_env=backend_env(cfg) if model else None)
    if mode == "external":
        from lab.stack.external import ExternalStack

        return ExternalStack(cfg)
    from lab.stack.compose import ComposeStack

    return ComposeStack(cfg)
