"""`lab init`: does the app call a model? Read in what the app is started with -- the variables
given to it, and the source files its command names (a script, `-m pkg.mod`, an ASGI/WSGI
`module:app`, a Node entry point) -- for the SDKs' variables and imports. A proposal says what
it was read in; an app whose calls the probe would otherwise send to a real provider (without a
key: an error) then talks to the stand-in from the probe on."""

from __future__ import annotations

import shlex
from pathlib import Path

# What names each protocol, in the order the stand-in's protocols are offered (one per SDK family).
MARKERS: dict[str, tuple[str, ...]] = {
    "openai_chat": (
        "OPENAI_BASE_URL",
        "OPENAI_API_BASE",
        "import openai",
        "from openai",
        "from langchain_openai",
        "'openai'",
        '"openai"',
        "@ai-sdk/openai",
    ),
    "anthropic_messages": ("ANTHROPIC_BASE_URL", "import anthropic", "from anthropic", "@anthropic-ai/sdk"),
    "ollama_chat": ("OLLAMA_HOST", "import ollama", "from ollama", "'ollama'", '"ollama"'),
}
SOURCE_SUFFIXES = (".py", ".js", ".mjs", ".cjs", ".ts")
READ_BYTES = 200_000  # a source file's head: imports and settings come first


def named_sources(command: str, cwd: Path) -> list[Path]:
    """The source files the start command names, relative to ``cwd`` (and to a --chdir)."""
    try:
        args = shlex.split(command)
    except ValueError:
        return []
    roots = [cwd] + [cwd / a for prev, a in zip(args, args[1:]) if prev in ("--chdir", "--app-dir")]
    found: list[Path] = []
    for prev, arg in zip([""] + args, args):
        names = [arg]
        if prev == "-m" or ":" in arg:  # python -m pkg.mod; uvicorn / gunicorn pkg.mod:app
            names = [arg.split(":", 1)[0].replace(".", "/") + ".py"]
        for root in roots:
            for name in names:
                p = root / name
                if p.suffix in SOURCE_SUFFIXES and p.is_file() and p not in found:
                    found.append(p)
    return found


def propose(command: str, cwd: Path, env: dict[str, str]) -> tuple[list[str], str] | None:
    """The protocols the app's variables or named source files point at, and where that was read."""
    where: dict[str, str] = {}
    for name in env:
        for proto, marks in MARKERS.items():
            if name in marks:
                where.setdefault(proto, f"the app's environment names {name}")
    for path in named_sources(command, cwd):
        try:
            with path.open("rb") as f:
                text = f.read(READ_BYTES).decode(errors="replace")
        except OSError:
            continue
        for proto, marks in MARKERS.items():
            hit = next((m for m in marks if m in text), None)
            if hit is not None:
                where.setdefault(proto, f"{path.relative_to(cwd) if path.is_relative_to(cwd) else path} has {hit!r}")
    if not where:
        return None
    protocols = [p for p in MARKERS if p in where]
    return protocols, "; ".join(where[p] for p in protocols)
