"""What the stand-in model's faults share: a plan set on the stand-in itself for every probe's
call while the fault is armed (one send), cleared on heal. Toxiproxy can delay or cut bytes on
the model link, never answer in a provider's shape -- so these act on the stand-in, and each
confirms itself with one call through the app's own way in (the model proxy)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, ClassVar

from lab.common.errors import UsageError
from lab.faults.base import Fault, Targets

PROBES = "chaoslab probe"  # every message the lab sends carries it: each of the trial group's calls


@dataclass
class StandInFault(Fault):
    """A fault the stand-in model plays: ``plan()`` is its behaviour (lab.standin.behaviour)."""

    window: ClassVar[str] = "send"  # one send: the turns before and after it must get their answers
    # Wherever a stand-in answers at the stack's model ports: lab investigate's native link, the
    # lab proxy's for a running app, or an app's compose project that runs it
    # (lab.stack.compose.override). Elsewhere apply() says so.
    modes: ClassVar[tuple[str, ...]] = ("native", "compose", "external")
    instead: ClassVar[str] = "a target spec with [model] (lab investigate serves the stand-in beside the app)"

    def plan(self) -> dict[str, Any]:
        raise NotImplementedError

    def apply(self, t: Targets) -> None:
        try:
            post(direct_url(t) + "/_lab/plans", {"match": PROBES, **self.plan()})
        except OSError:  # nothing listens: no stand-in in this run
            raise UsageError(
                f"{self.name}: no stand-in model answers at {direct_url(t)}",
                "it acts on the stand-in lab investigate starts for a target spec with [model] (docs/model.md)",
            ) from None

    def remove(self, t: Targets) -> None:
        req = urllib.request.Request(direct_url(t) + "/_lab/plans", method="DELETE")
        with urllib.request.urlopen(req, timeout=5):
            pass


def direct_url(t: Targets) -> str:
    """The stand-in itself, not through its proxy: the lab's control routes."""
    return str(t.stack.cfg.model_direct_url)


def post(url: str, body: dict[str, Any]) -> int:
    """POST JSON; the HTTP status (an error status is an answer here, not an exception)."""
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return int(r.status)
    except urllib.error.HTTPError as exc:
        exc.close()
        return int(exc.code)
