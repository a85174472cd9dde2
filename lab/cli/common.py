"""What the subcommands share: option types that name the bad value, and printing endpoints."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from lab.common.config import MODES

MODE_HELP = f"how the stack runs: {', '.join(MODES)} (default: native)"


def mode(value: str) -> str:
    if value not in MODES:
        raise argparse.ArgumentTypeError(f"unknown mode {value!r}; valid: {', '.join(MODES)}")
    return value


def opt_int(flag: str, lo: int, hi: int) -> Callable[[str], int | None]:
    """An int option that also accepts '' (make passes empty variables) as "use the default"."""

    def conv(value: str) -> int | None:
        if value.strip() == "":
            return None
        try:
            n = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag}={value!r} is not an integer") from None
        if not lo <= n <= hi:
            raise argparse.ArgumentTypeError(f"{flag}={n} is out of range [{lo}, {hi}]")
        return n

    return conv


def add_mode(p: argparse._ActionsContainer) -> None:
    p.add_argument("--mode", type=mode, default="native", help=MODE_HELP)


MODEL_HELP = (
    "the built-in service takes its replies from the lab's stand-in model (OpenAI-compatible, "
    "behind a Toxiproxy link of its own) instead of its in-process fake: every trial also checks "
    "what each model call was told against the turns the user had been acknowledged (metric "
    "told_less); native mode"
)


def add_model(p: argparse._ActionsContainer) -> None:
    p.add_argument("--model", action="store_true", help=MODEL_HELP)


def print_endpoints(endpoints: dict[str, str]) -> None:
    labels = {
        "chat": "chat page (browser, through toxiproxy)",
        "backend": "backend (direct)",
        "toxiproxy": "toxiproxy API",
        "redis": "redis (direct, for the checker)",
        "redis_proxy": "redis through toxiproxy (the backend's only address)",
    }
    for key, url in endpoints.items():
        print(f"  {labels.get(key, key):<52} {url}")
