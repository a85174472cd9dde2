"""report.html as a reader opens it: from disk, in Chromium, with every network route aborted.
It must make no request, show one heatmap cell per results.json cell with the same rate, and
draw a four-lane timeline for a failing trial."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Route

from tests.helpers import isolated_env, run_lab

# fire_and_forget loses replies with and without latency on the Redis link: failing trials
# whose timelines have every lane, the fault lane included (latency is a whole-trial fault).
# The incident profiles are there for the verdict (a defect of the incident needs them).
ONLY = "profile=correct|fire_and_forget|incident|incident-fire_and_forget;fault=none|latency;refresh=after_ack"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A small run of its own -- or, with LAB_REPORT_DIR=reports/latest, the run a `make chaos`
    left (the same checks on a full report)."""
    given = os.environ.get("LAB_REPORT_DIR")
    if given:
        yield Path(given).resolve()
        return
    tmp = tmp_path_factory.mktemp("report")
    env = isolated_env(tmp / "run")
    try:
        res = run_lab(
            env,
            "chaos",
            "--trials",
            "5",
            "--seed",
            "11",
            "--only",
            ONLY,
            "--reports",
            str(tmp / "reports"),
            timeout=600,
        )
        assert res.returncode == 0, res.stdout + res.stderr
        assert "report.html" in res.stdout
        yield (tmp / "reports" / "latest").resolve()
    finally:
        run_lab(env, "down", timeout=60)


def test_report_opens_offline_and_shows_the_results(run_dir: Path, browser: Browser) -> None:
    results = json.loads((run_dir / "results.json").read_text())
    url = (run_dir / "report.html").as_uri()
    ctx = browser.new_context(viewport={"width": 1300, "height": 900})
    requests: list[str] = []
    aborted: list[str] = []

    def abort(route: Route) -> None:
        if route.request.url == url:
            route.continue_()  # the report itself, from disk
            return
        aborted.append(route.request.url)
        route.abort()

    ctx.route("**/*", abort)
    ctx.on("request", lambda r: requests.append(r.url))
    page = ctx.new_page()
    try:
        page.goto(url)
        # One heatmap cell per results.json cell, carrying the same loss rate.
        cells = page.locator("table.heatmap td.hm")
        shown = {
            cells.nth(i).get_attribute("data-cell"): float(cells.nth(i).get_attribute("data-rate") or "nan")
            for i in range(cells.count())
        }
        assert cells.count() == len(results["cells"])
        assert shown == {c["cell_id"]: c["loss_rate"] for c in results["cells"]}
        assert any(rate > 0 for rate in shown.values()) and any(rate == 0 for rate in shown.values())

        # A failing trial under a fault: its timeline has the four lanes, each with something in it.
        latency = next(
            c for c in results["cells"] if c["fault"] == "latency" and c["failing_trials"] and c["profile"] != "correct"
        )
        trial = page.locator(f'details.trial[data-trial="{latency["failing_trials"][0]}"]')
        trial.evaluate("e => e.open = true")
        lanes = trial.locator("svg.timeline g.lane")
        assert [lanes.nth(i).get_attribute("data-lane") for i in range(lanes.count())] == [
            "browser",
            "http",
            "redis",
            "fault",
        ]
        for lane in ("browser", "http", "redis", "fault"):
            assert trial.locator(f'g.lane[data-lane="{lane}"] .item').count() > 0, lane
        assert trial.locator("g.lane[data-lane=browser] .item.lost").count() > 0, (
            "the acknowledged-then-lost replies are marked"
        )
        assert trial.locator('a[href$="trace-1.zip"]').count() == 1
        assert "playwright show-trace" in trial.inner_text()

        # The verdict in words.
        assert "fire_and_forget causes it" in page.locator("ul.verdicts").inner_text()
        out = Path("test-results")
        out.mkdir(exist_ok=True)
        page.screenshot(path=str(out / "report-html.png"), full_page=True)
    finally:
        ctx.close()
    assert aborted == [], f"report.html made network requests: {aborted}"
    assert requests == [url], f"report.html loaded more than itself: {requests}"
