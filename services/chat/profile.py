"""The per-request lab profile, carried by X-Lab-* headers that the lab's browser context sets.

Profiles travel with each request, so trials with different profiles run at once and a backend
restart changes nothing. Outside lab mode the headers are refused (403): a production
deployment cannot be switched into a defect.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from flask import Request

from services.chat import defects
from services.chat.defects import Behaviour
from services.chat.errors import ApiError

H_DEFECTS = "X-Lab-Defects"  # comma-separated defect names; empty = correct profile
H_TTL_MS = "X-Lab-Ttl-Ms"  # conversation TTL in ms (a TTL experiment takes a second)
H_LLM_LATENCY_MS = "X-Lab-Llm-Latency-Ms"
H_TOKEN_DELAY_MS = "X-Lab-Token-Delay-Ms"
H_TRIAL = "X-Lab-Trial"  # trial id, for log correlation only
# "fake": the in-process fake answers this request even where CHAT_MODEL_URL names a provider --
# `lab bench` measures the stand-in against the fake on one running service, trial by trial.
H_MODEL = "X-Lab-Model"
MODELS = ("fake",)
HEADERS = (H_DEFECTS, H_TTL_MS, H_LLM_LATENCY_MS, H_TOKEN_DELAY_MS, H_TRIAL, H_MODEL)


@dataclass(frozen=True)
class Profile:
    defects: frozenset[str]
    ttl_ms: int
    llm_latency_ms: int
    token_delay_ms: int
    trial: str | None
    model_fake: bool = False  # X-Lab-Model: fake
    # A lesson's exercise (services/chat/exercise.py), applied after the named defects.
    exercise: Callable[[Behaviour], Behaviour] | None = None

    @property
    def behaviour(self) -> Behaviour:
        b = defects.behaviour(self.defects)
        return b if self.exercise is None else self.exercise(b)


def _int_header(req: Request, name: str, default: int, lo: int, hi: int) -> int:
    raw = req.headers.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ApiError(400, "bad_header", f"{name}={raw!r} is not an integer") from None
    if not lo <= value <= hi:
        raise ApiError(400, "bad_header", f"{name}={value} is out of range [{lo}, {hi}]")
    return value


def parse_defects(text: str) -> frozenset[str]:
    """Comma-separated defect names -> a set; "" is the correct profile, "incident" every defect
    (the app as it was in the incident: what `lab investigate` faces as a black box)."""
    names = frozenset(n.strip() for n in text.split(",") if n.strip())
    if "incident" in names:
        names = (names - {"incident"}) | frozenset(defects.REGISTRY)
    return names


def from_request(
    req: Request, config: Mapping[str, Any], exercise: Callable[[Behaviour], Behaviour] | None = None
) -> Profile:
    """The request's profile; ``exercise`` is the loaded exercise's step, if the backend has one."""
    present = [h for h in HEADERS if h in req.headers]
    if present and not config["LAB_MODE"]:
        raise ApiError(
            403,
            "lab_mode_off",
            f"{', '.join(present)} honoured only when the service runs in lab mode (CHAT_LAB_MODE=1)",
        )
    # Without the header, the service's configured default (CHAT_DEFECTS, validated at start-up)
    # applies: a black-box investigation (lab investigate) sends no lab headers at all.
    raw = req.headers.get(H_DEFECTS)
    names = parse_defects(str(config.get("DEFECTS", "")) if raw is None else raw)
    use_exercise = "exercise" in names
    if use_exercise and exercise is None:
        raise ApiError(
            400,
            "no_exercise",
            "X-Lab-Defects names 'exercise' but this backend was "
            "started without one (CHAT_LAB_EXERCISE=<file>; `lab lesson N --check` sets it)",
        )
    names -= {"exercise"}
    unknown = sorted(names - defects.REGISTRY.keys())
    if unknown:
        raise ApiError(
            400,
            "unknown_defect",
            f"unknown defect(s) {', '.join(unknown)}; valid: {', '.join(defects.REGISTRY)}",
            valid=list(defects.REGISTRY),
        )
    model = req.headers.get(H_MODEL)
    if model is not None and model not in MODELS:
        raise ApiError(400, "bad_header", f"{H_MODEL}={model!r}; valid: {', '.join(MODELS)}", valid=list(MODELS))
    day_ms = 24 * 3600 * 1000
    return Profile(
        defects=names,
        ttl_ms=_int_header(req, H_TTL_MS, int(config["TTL_MS"]), 10, 365 * day_ms),
        llm_latency_ms=_int_header(req, H_LLM_LATENCY_MS, int(config["LLM_LATENCY_MS"]), 0, 60_000),
        token_delay_ms=_int_header(req, H_TOKEN_DELAY_MS, int(config["TOKEN_DELAY_MS"]), 0, 5_000),
        trial=req.headers.get(H_TRIAL),
        model_fake=model == "fake",
        exercise=exercise if use_exercise else None,
    )
