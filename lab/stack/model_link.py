"""The stand-in model beside Redis and Toxiproxy, behind a Toxiproxy proxy of its own ("model"):
the app is given only the proxy's address, so every fault the lab puts on a link (latency, a
reset, a blackhole) applies to its model calls as it does to its Redis traffic.

A context manager: it starts ``python -m lab.standin`` (a process recorded in the run folder, so
a killed lab's leftover is stopped with the rest of the stack), adds the proxy to the running
Toxiproxy, and on the way out -- success, failure or a signal -- removes both."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path
from contextlib import AbstractContextManager, nullcontext
from types import TracebackType
from collections.abc import Callable
from typing import Any

from lab.common.config import PORT_ENV, LabConfig
from lab.common.errors import LabError, UsageError
from lab.common.http import http_get
from lab.common.signals import deferred
from lab.common.wait import wait_until
from lab.stack import ports, procs
from lab.stack.toxiproxy import Toxiproxy, ToxiproxyError

PROXY = "model"  # the Toxiproxy proxy's name: faults name it (latency proxy=model)
NAME = "model"  # the process's name in the run folder (model.log, its pidfile)


class ModelLink:
    """``with ModelLink(cfg, run_dir) as m:`` -- ``m.url`` is the address an app's SDK is given
    (through Toxiproxy), ``m.calls(texts)`` the stand-in's record of the calls carrying them."""

    def __init__(self, cfg: LabConfig, run_dir: Path, timeout_s: float = 15.0, spawn: bool = True) -> None:
        # spawn=False: a compose project runs the stand-in and its proxy (lab.stack.compose.override);
        # the link only waits for both to answer and leaves them to the project's removal.
        self.cfg, self.run_dir, self.timeout_s, self.spawn = cfg, run_dir, timeout_s, spawn
        self.proc: procs.ProcInfo | None = None
        self.toxiproxy = Toxiproxy(cfg.toxiproxy_url)

    @property
    def url(self) -> str:
        return self.cfg.model_url

    @property
    def direct_url(self) -> str:
        return self.cfg.model_direct_url

    def __enter__(self) -> "ModelLink":
        if not self.spawn:
            for url, what in (
                (self.direct_url, "the stand-in model"),
                (self.url, "the stand-in model through Toxiproxy"),
            ):
                wait_until(_answers(url), what=what, timeout_s=self.timeout_s)
            return self
        for name in ("model", "model_proxy"):
            port = self.cfg.ports[name]
            if not ports.is_free(self.cfg.host, port):
                raise UsageError(
                    f"port {port} ({PORT_ENV[name]}) is in use, the stand-in model needs it",
                    f"stop what holds it, or choose another: {PORT_ENV[name]}=NNNNN",
                )
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self) -> None:
        root = str(self.cfg.root)
        env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
        argv = [sys.executable, "-m", "lab.standin", "--host", self.cfg.host, "--port", str(self.cfg.ports["model"])]
        self.proc = procs.spawn(NAME, argv, self.run_dir, env=env, cwd=self.cfg.root)
        proc = self.proc

        def exited() -> str | None:
            alive = proc.alive()
            return None if alive else f"the stand-in model exited: {procs.log_tail(self.run_dir / 'model.log')}"

        wait_until(
            lambda: http_get(self.direct_url + "/_lab/health")[0] == 200,
            what=f"the stand-in model (pid {proc.pid})",
            timeout_s=self.timeout_s,
            abort=exited,
        )
        host = self.cfg.host
        try:
            self.toxiproxy.create_proxy(
                PROXY, f"{host}:{self.cfg.ports['model_proxy']}", f"{host}:{self.cfg.ports['model']}"
            )
        except ToxiproxyError as exc:
            raise LabError(f"the stand-in model's link: {exc}", "run `lab down` and try again") from None
        wait_until(
            lambda: http_get(self.url + "/_lab/health")[0] == 200,
            what="the stand-in model through Toxiproxy",
            timeout_s=self.timeout_s,
        )

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if not self.spawn:
            return
        with deferred():  # a second Ctrl-C must not leave the proxy or the process behind
            try:
                self.toxiproxy.delete_proxy(PROXY)
            except (ToxiproxyError, OSError, LabError):
                pass  # not created, or Toxiproxy is gone already (it stops with the stack)
            if self.proc is not None:
                procs.stop(self.proc, self.run_dir, timeout_s=5.0)
                self.proc = None

    # ------------------------------------------------------------------ plans
    def plan(self, match: str, **behaviour: Any) -> None:
        """The calls carrying ``match`` answered as ``behaviour`` says (lab.standin.behaviour:
        ttft_ms, token_ms, ...); the stand-in answers at once, whole, unless told otherwise."""
        body = json.dumps({"match": match, **behaviour}).encode()
        req = urllib.request.Request(f"{self.direct_url}/_lab/plans", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=5):
            pass

    def unplan(self, match: str) -> None:
        query = urllib.parse.urlencode({"match": match})
        req = urllib.request.Request(f"{self.direct_url}/_lab/plans?{query}", method="DELETE")
        with urllib.request.urlopen(req, timeout=5):
            pass

    def pace(self, match: str, token_ms: int, ttft_ms: int = 0) -> None:
        """The calls carrying ``match`` stream a token every ``token_ms``, the first ``ttft_ms``
        on: a reply that takes time to stream, so a cut mid-stream can land inside it."""
        self.plan(match, token_ms=token_ms, ttft_ms=ttft_ms)

    def unpace(self, match: str) -> None:
        self.unplan(match)

    # ------------------------------------------------------------------ the record
    def calls(self, texts: list[str], since: float = 0.0) -> list[dict[str, Any]]:
        """The finished calls whose last user message carries one of ``texts`` (a trial's sends),
        oldest first. Read from the stand-in directly: a fault on the link must not hide them."""
        return self._record(texts, since)["calls"]

    def still_streaming(self, texts: list[str], since: float = 0.0) -> list[dict[str, Any]]:
        """The calls carrying one of ``texts`` the stand-in is still answering -- a write still to
        come from an app that reads the model's stream to its end after its page went away --
        less those the lab's own fault holds open (no first token: the app's to give up on)."""
        return self.record(texts, since)["open"]

    def record(self, texts: list[str], since: float = 0.0, match: str = "") -> dict[str, list[dict[str, Any]]]:
        """One read of the record: the finished calls ("calls") and those still open ("open",
        as still_streaming counts them) that carry one of ``texts``; ``match``, a text all of
        them carry, has the stand-in send only those (trials side by side: not the whole run's)."""
        got = self._record(texts, since, match)
        got["open"] = [c for c in got["open"] if c.get("behaviour", {}).get("fault") != "no_first_token"]
        return got

    def _record(self, texts: list[str], since: float, match: str = "") -> dict[str, list[dict[str, Any]]]:
        wanted = [t for t in texts if t]
        query = urllib.parse.urlencode({"since": since, **({"match": match} if match else {})})
        with urllib.request.urlopen(f"{self.direct_url}/_lab/calls?{query}", timeout=5) as r:
            got = json.loads(r.read())
        return {
            part: [c for c in got.get(part, []) if any(t in _last_user(c) for t in wanted)]
            for part in ("calls", "open")
        }


def backend_env(cfg: LabConfig) -> dict[str, str]:
    """What the built-in service is given to take its replies from the stand-in: its proxy, as an
    app's SDK is given it (OpenAI-compatible, /v1)."""
    return {"CHAT_MODEL_URL": cfg.model_url + "/v1"}


def beside(cfg: LabConfig, run_dir: Path, on: bool) -> AbstractContextManager[ModelLink | None]:
    """``with beside(stack.cfg, stack.run_dir, args.model) as model:`` -- the stand-in for a
    command's run when asked for (None otherwise)."""
    return ModelLink(cfg, run_dir) if on else nullcontext()


async def wait_ended(
    model: ModelLink, texts: list[str], since: float, deadline_s: float, match: str = ""
) -> tuple[int, list[dict[str, Any]]]:
    """Wait until the stand-in has ended every call carrying one of ``texts`` (it records a
    call once its handler returns, a moment after the app read the last byte; an app that reads
    a stream to its end after its page went away writes only then). Returns how many were still
    open at the deadline (0: all ended) and the finished calls of the last read."""
    deadline = time.monotonic() + deadline_s
    while True:
        got = await asyncio.to_thread(model.record, texts, since, match)
        if not got["open"] or time.monotonic() >= deadline:
            return len(got["open"]), got["calls"]
        await asyncio.sleep(0.05)  # a polling interval bounded by the deadline


def _answers(url: str) -> Callable[[], bool]:
    return lambda: http_get(url + "/_lab/health")[0] == 200


def _last_user(call: dict[str, Any]) -> str:
    return next((m["text"] for m in reversed(call.get("messages", [])) if m.get("role") == "user"), "")
