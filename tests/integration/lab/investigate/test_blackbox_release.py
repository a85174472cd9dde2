"""A black-box trial lets its place in a pooled group go once its page has reloaded, not before
(its sends and the reload load the app) and not at its end (the settled read's quiet window
only waits): Prober.trial calls ``reloaded`` once, between its refresh and its settled read.

Against the stdlib app of test_send_then_reload (real Chromium, no Redis)."""

from __future__ import annotations

from typing import cast

import pytest

from lab.faults import base as faults
from lab.investigate.browser.pages import chromium
from lab.investigate.run.blackbox import Prober
from lab.investigate.run.experiments import Experiment
from lab.investigate.spec.parse import Spec
from lab.model.history import Trial
from tests.helpers import run_async
from tests.integration.lab.investigate.test_send_then_reload import _App, _spec, app  # noqa: F401


async def _trial(spec: Spec) -> tuple[Trial, list[list[str]]]:
    seen: list[list[str]] = []  # the trial's phases each time it let its place go
    async with chromium() as browser:
        prober = Prober(spec, browser, cast(faults.Targets, None), "redis://127.0.0.1:1/0")  # no fault: unused
        t = Trial("e0-none-settled-00")

        def reloaded() -> None:
            seen.append([e["phase"] for e in t.events if e.get("kind") == "phase"])

        try:
            await prober.trial(Experiment("none", (), "settled", 2, "test"), t.trial_id, 1, into=t, reloaded=reloaded)
        finally:
            await prober.close_pool()
            prober.close()
    return t, seen


@pytest.mark.parametrize("page", [None, "/"], ids=["lab_page", "app_page"])
def test_the_place_goes_after_the_reload_and_before_the_settled_read(app: _App, page: str | None) -> None:  # noqa: F811
    t, seen = run_async(_trial(_spec(app, page)))
    assert t.unknown is None and [s.outcome for s in t.sends] == ["ok", "ok"], (t.unknown, t.sends)
    assert len(seen) == 1, seen
    assert seen[0][-1] == "refresh" and "settle" not in seen[0], seen
    assert t.final_rows is not None and len(t.final_rows) == 4  # and the settled read came after
