"""Lab mode only: a trainee's exercise module (`lab lesson N --check`) as one more profile step.

An exercise file is written like a defect module: ``apply(b: Behaviour) -> Behaviour`` replaces
the one step its lesson is about. The backend imports it once at start-up when the lab starts it
with ``CHAT_LAB_EXERCISE=<path>``; a request applies it with ``X-Lab-Defects: exercise``.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from flask import Flask

from services.chat.defects import Behaviour

NAME = "exercise"  # the profile name a request uses to apply it
_EXTENSION = "chat_exercise"


def load(path: str | Path) -> ModuleType:
    """Import the file under a private module name (it is not on sys.path and must not be)."""
    path = Path(path).resolve()
    spec = importlib.util.spec_from_file_location(f"chat_lab_exercise_{abs(hash(path))}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and typing look modules up by name
    spec.loader.exec_module(module)
    if not callable(getattr(module, "apply", None)):
        raise ImportError(f"{path}: defines no apply(b: Behaviour) -> Behaviour")
    return module


def init_app(app: Flask) -> None:
    path = app.config.get("LAB_EXERCISE")
    if app.config["LAB_MODE"] and path:
        app.extensions[_EXTENSION] = load(str(path))


def step(app: Flask) -> Callable[[Behaviour], Behaviour] | None:
    """The loaded exercise's apply(), or None when the backend runs without one."""
    module = app.extensions.get(_EXTENSION)
    return None if module is None else module.apply
