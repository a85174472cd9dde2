"""Redis and Toxiproxy without the built-in backend: the half of the native stack a foreign
target is plugged into. The same NativeStack (processes, readiness checks, clean-up), with two
of its three services: the browser talks to the target directly, on the target's own origin."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from lab.common import redact
from lab.common.config import LabConfig
from lab.common.errors import UsageError
from lab.stack.compose.override import url_login
from lab.stack.model_link import ModelLink
from lab.stack.native import NativeStack

if TYPE_CHECKING:
    from lab.investigate.spec.parse import Spec

LINK_SERVICES = ("redis", "toxiproxy")


def redis_link(cfg: LabConfig) -> NativeStack:
    """redis-server + toxiproxy-server with the "redis" proxy only (no backend, no chat proxy)."""
    return NativeStack(cfg, services=LINK_SERVICES)


def link_for(cfg: LabConfig) -> NativeStack:
    """The investigation's own Redis + Toxiproxy, in a run folder next to the native stack's."""
    return redis_link(replace(cfg, run_dir=cfg.run_dir.with_name(cfg.run_dir.name + "-investigate")))


def link_for_spec(spec: "Spec", cfg: LabConfig) -> Any:
    """What the target's Redis traffic goes through: the lab's own Redis + Toxiproxy; the app's
    Redis behind `lab proxy up` ([start] external); or the app's compose project with the lab's
    Toxiproxy in it ([start] compose)."""
    if spec.start.external:
        from lab.stack.proxy import RedisProxy

        proxy = RedisProxy(cfg)
        proxy.run_dir.mkdir(parents=True, exist_ok=True)
        return proxy
    if spec.start.compose is not None:
        from lab.stack.compose.app import AppStack

        run_dir = link_for(cfg).run_dir
        run_dir.mkdir(parents=True, exist_ok=True)
        model_env = dict(spec.model.env) if spec.model is not None else None
        return AppStack(cfg, spec.start.compose, run_dir, spec.start.env, spec.http.port, model_env)
    return link_for(cfg)


@contextmanager
def model_for(spec: "Spec", link: Any, say: Callable[[str], None]) -> Iterator[ModelLink | None]:
    """The stand-in model behind its own Toxiproxy proxy, where the app calls a model ([model]);
    None where it does not."""
    if spec.model is None:
        yield None
        return
    # A compose project serves the stand-in itself (lab.stack.compose.override): only waited for.
    in_project = bool(getattr(link, "serves_model", False))
    with ModelLink(link.cfg, link.run_dir, spawn=not in_project) as model:
        names = ", ".join(spec.model.env)
        protocols = ", ".join(spec.model.protocols)
        if in_project:
            from lab.stack.compose.override import MODEL_URL

            say(
                f"  stand-in model ({protocols}) in the compose project, through its Toxiproxy: the app's {names} "
                f"point at {MODEL_URL} (the lab's view: {model.url})"
            )
        elif spec.start.external:
            given = " ".join(f"{k}={v.replace('{model_url}', model.url)}" for k, v in spec.model.env.items())
            say(
                f"  stand-in model ({protocols}) at {model.url} through Toxiproxy; the running app must have been "
                f"started with {given} (the lab does not start it)"
            )
        else:
            say(f"  stand-in model ({protocols}) at {model.url} through Toxiproxy; the app's {names} point there")
        yield model


# A mid-stream cut needs a reply that takes time to stream: the stand-in answers at once unless
# told otherwise, and a whole reply in one chunk has nothing to cut. About 20 tokens: ~0.5 s.
PACE_MS = 25
# ... and a first token that takes a moment, as a real model's does (hundreds of ms): an app that
# stores the question, then streams, wrote it 3-11 ms before the page's first chunk with none,
# within the clock's grain of the cut (lab.investigate.browser.cut: unknown), in 6 of 6 trials
# of a CI run (2026-12-05) -- its mid-stream window never tested.
PACE_TTFT_MS = 100


@asynccontextmanager
async def paced(model: ModelLink | None, match: str) -> AsyncIterator[None]:
    """The stand-in streams the calls carrying ``match`` a token every PACE_MS, after a first
    token PACE_TTFT_MS on, while inside (nothing where there is no stand-in)."""
    if model is None:
        yield
        return
    await asyncio.to_thread(model.pace, match, PACE_MS, PACE_TTFT_MS)
    try:
        yield
    finally:
        await asyncio.to_thread(model.unpace, match)


def app_login(spec: Spec) -> tuple[str, int] | None:
    """An external target's login to its own Redis: the user:password and db of the URL in
    [redis] url_env's variable (None: the spec names none). The password is a secret of the
    run: redacted from everything it writes."""
    var = spec.redis.url_env
    if var is None:
        return None
    value = os.environ.get(var, "")
    if not value:
        raise UsageError(
            f"[redis] url_env = {var!r}: no such variable in the environment",
            f"export {var}=redis://:PASSWORD@HOST:PORT/DB -- the URL the app itself uses",
        )
    auth, db = url_login(value)
    password = auth.partition(":")[2]
    redact.add(password, unquote(password), auth)
    return auth, db


def direct_redis(spec: Spec, link: Any) -> str:
    """The Redis the lab reads the key from and follows (MONITOR): the app's own behind `lab
    proxy` (external), logged in as [redis] url_env says -- the link's config takes the login,
    so its faults' checks through the proxy log in too -- else the link's, with the app's
    password and db where its compose file gives them (link.cfg, set as the project came up)."""
    if not spec.start.external:
        return str(link.cfg.redis_url)
    login = app_login(spec)
    if login is not None:
        link.cfg = replace(link.cfg, redis_auth=login[0], redis_db=login[1])
    return str(link.redis_url)
