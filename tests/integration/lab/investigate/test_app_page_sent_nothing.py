"""A send on the app's own page that never answered: the app's silence or the lab's lost click?
Both leave "no answer"; only the page's own requests tell them apart. A click that sent nothing
makes the trial unknown (the lab's step failed: it tested nothing of the app); a POST that left
and was never answered is the app's, an ``info`` send the trial is judged with.

Against the stdlib app of test_send_then_reload (real Chromium, no Redis), its page's send
button either dead or posting to an app that holds the request past the spec's timeout."""

from __future__ import annotations

import dataclasses
import threading
from typing import Any, cast

import pytest

from lab.faults import base as faults
from lab.investigate.browser import app_page
from lab.investigate.browser.pages import chromium
from lab.investigate.run.blackbox import Prober
from lab.investigate.run.experiments import Experiment
from lab.investigate.spec.parse import Spec
from lab.model.history import Trial
from tests.helpers import run_async
from tests.integration.lab.investigate.test_send_then_reload import _App, _Handler, _spec, app  # noqa: F401

TIMEOUT_S = 1.5  # the spec's chat.timeout_s here: how long a send waits for its answer


class _Stuck(_Handler):
    """Its page's button sends nothing at "/dead"; its POST is held until released."""

    def do_GET(self) -> None:
        if self.path == "/dead":
            page = app_page_html().replace(
                'addEventListener("submit", async ev => {',
                'addEventListener("submit", ev => { ev.preventDefault(); return;',
            )
            self._reply(200, page, "text/html")
            return
        super().do_GET()

    def do_POST(self) -> None:
        self.server.log.append("POST")
        cast(Any, self.server).release.wait(30)  # bounded: released by the test's end
        self._reply(503, "{}")


def app_page_html() -> str:
    from tests.integration.lab.investigate import test_send_then_reload as t

    return t._PAGE.replace("__XHR__", "false")


def _short(spec: Spec) -> Spec:
    return dataclasses.replace(spec, chat=dataclasses.replace(spec.chat, timeout_s=TIMEOUT_S))


async def _trial(spec: Spec) -> Trial:
    async with chromium() as browser:
        prober = Prober(spec, browser, cast(faults.Targets, None), "redis://127.0.0.1:1/0")  # no fault: unused
        try:
            return await prober.trial(Experiment("none", (), "settled", 2, "test"), "e0-none-settled-00", 1)
        finally:
            await prober.close_pool()
            prober.close()


@pytest.fixture
def stuck(app: _App) -> _App:  # noqa: F811
    app.RequestHandlerClass = _Stuck
    cast(Any, app).release = threading.Event()
    yield app  # type: ignore[misc]
    cast(Any, app).release.set()


def test_a_click_that_sent_nothing_makes_the_trial_unknown(stuck: _App) -> None:
    t = run_async(_trial(_short(_spec(stuck, "/dead"))))
    assert "POST" not in stuck.log  # the page really sent nothing
    assert t.unknown is not None and t.unknown.startswith("driver: turn 1: " + app_page.NOT_SENT), t.unknown
    assert [s.outcome for s in t.sends] == ["info"]  # recorded as it was; the trial stops at it


@pytest.mark.parametrize("page", ["/", "/xhr"], ids=["fetch", "xhr"])
def test_a_post_the_app_never_answered_is_the_apps(stuck: _App, page: str) -> None:
    t = run_async(_trial(_short(_spec(stuck, page))))
    assert "POST" in stuck.log
    assert t.sends and t.sends[0].outcome == "info", t.sends
    assert t.sends[0].reason.startswith("no POST /api/send answered within"), t.sends[0].reason
    assert not (t.unknown or "").startswith("driver"), t.unknown
