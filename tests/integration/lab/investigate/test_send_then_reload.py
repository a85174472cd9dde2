"""after_ack's last send: the page reloads itself the moment the answer arrives (no round trip
to the lab in between), on the lab's page and on the app's own (fetch: an in-page hook; XHR: the
lab reloads it), and the trial records the delay, the refresh mark and the TTL read after it.

Against a tiny stdlib app in a thread (the foreign example's API: no ids, newest-first
"role:content" strings) and real Chromium; no Redis (the app sets no cookie: no key to read)."""

from __future__ import annotations


import dataclasses
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

import pytest

from tests.helpers import run_async

from lab.faults import base as faults
from lab.model.history import Trial
from lab.investigate.spec import parse as sp
from lab.investigate.run.blackbox import Prober
from lab.investigate.run.experiments import Experiment
from lab.investigate.browser.pages import Pages, chromium
from lab.investigate.spec.parse import Spec
from lab.model.store import CLOCK_GRAIN_S
from tests.unit.lab.investigate.spec.test_parse import ROOT

_PAGE = """<!doctype html><html><body><ol id="messages"></ol>
<form id="form"><input id="msg"><button id="send">Send</button></form>
<script>
const list = document.getElementById("messages"), input = document.getElementById("msg");
function render(items) {
  list.textContent = "";
  for (const item of items.slice().reverse()) {
    const i = item.indexOf(":"), li = document.createElement("li");
    li.className = "msg"; li.dataset.role = item.slice(0, i); li.textContent = item.slice(i + 1);
    list.appendChild(li);
  }
}
async function load() { render((await (await fetch("/api/messages")).json()).messages); }
function post(text) {
  const body = JSON.stringify({text});
  if (!__XHR__) return fetch("/api/send", {method: "POST", headers: {"Content-Type": "application/json"}, body})
    .then(r => r.json());
  return new Promise(done => {
    const x = new XMLHttpRequest();
    x.open("POST", "/api/send"); x.setRequestHeader("Content-Type", "application/json");
    x.onload = () => done(JSON.parse(x.responseText)); x.send(body);
  });
}
document.getElementById("form").addEventListener("submit", async ev => {
  ev.preventDefault();
  delete document.body.dataset.idle;
  await post(input.value);
  await load();  // the page's own read right after the answer: not the reload's
  document.body.dataset.idle = "1";
});
load().finally(() => { document.body.dataset.loaded = "1"; });
</script></body></html>"""


class _App(ThreadingHTTPServer):
    rows: list[str]  # newest first
    log: list[str]  # "GET" / "POST" per API request, in arrival order
    failed_reads: set[int]  # the history GETs (0: the first) answered 503


class _Handler(BaseHTTPRequestHandler):
    server: _App

    def log_message(self, *args: Any) -> None:
        pass

    def _reply(self, code: int, body: str, kind: str = "application/json") -> None:
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path in ("/", "/xhr"):
            self._reply(200, _PAGE.replace("__XHR__", str(self.path == "/xhr").lower()), "text/html")
            return
        failed = self.server.log.count("GET") in self.server.failed_reads
        self.server.log.append("GET")
        self._reply(503 if failed else 200, json.dumps({"messages": [] if failed else self.server.rows}))

    def do_POST(self) -> None:
        text = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["text"]
        self.server.log.append("POST")
        self.server.rows[:0] = [f"bot:{len(text)} characters", f"user:{text}"]
        self._reply(200, json.dumps({"answer": f"{len(text)} characters"}))


@pytest.fixture
def app() -> Iterator[_App]:
    server = _App(("127.0.0.1", 0), _Handler)
    server.rows, server.log, server.failed_reads = [], [], set()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _spec(app: _App, page: str | None) -> Spec:
    """examples/foreign-app.toml on the test app's port: its own page at ``page`` (None: the lab's)."""
    spec = sp.load(ROOT / "examples" / "foreign-app.toml")
    port = app.server_address[1]
    http = dataclasses.replace(spec.http, base_url=f"http://127.0.0.1:{port}", port=port)
    pg = dataclasses.replace(spec.page, path=page) if page is not None and spec.page else None
    return dataclasses.replace(spec, http=http, page=pg)


async def _send_then_reload(spec: Spec) -> tuple[dict[str, Any], dict[str, Any], Any]:
    async with chromium() as browser:
        pages = Pages(spec, browser)
        slot = await pages.pool.take()
        await pages.ready(slot)
        ctx, page = slot.ctx, slot.page
        try:
            opened = await pages.load(ctx, page)
            assert opened["status"] == 200, opened
            answer, loaded = await pages.send_then_reload(page, "hello there", None, False)
            left = await page.evaluate("() => Object.keys(sessionStorage)")
        finally:
            await pages.close()
    return answer, loaded, left


@pytest.mark.parametrize("page", [None, "/", "/xhr"], ids=["lab_page", "app_page_fetch", "app_page_xhr"])
def test_the_answer_survives_the_reload_that_follows_it(app: _App, page: str | None) -> None:
    spec = _spec(app, page)
    # The XHR page's own read after the send is not the reload's (here it fails).
    app.failed_reads = {1} if page == "/xhr" else set()
    answer, loaded, left = run_async(_send_then_reload(spec))
    assert answer["status"] == 200 and json.loads(answer["body"]) == {"answer": "11 characters"}, answer
    # (.get: a reload that never read the history has no start; the message shows why.)
    assert answer["end"] is not None and loaded.get("start") is not None, (answer, loaded)
    # After the answer, within the browser's clock grain: two documents' times (the answer's in the
    # page that sent it, the read's in the reloaded one) -- 1.8 ms "before" once in a run on four
    # workers, the same grain lab.model.store allows between any two clocks.
    assert -CLOCK_GRAIN_S * 1000 <= (loaded["start"] - answer["end"]) * 1000 < 5_000
    assert loaded["status"] == 200 and loaded.get("error") is None, loaded
    rows = Pages(spec, None).rows(loaded).rows  # type: ignore[arg-type]
    assert rows is not None and [(r.role, r.text) for r in rows] == [
        ("user", "hello there"),
        ("assistant", "11 characters"),
    ]
    assert left == []  # the kept answer is read once and cleared; the hook disarmed
    # Reloaded the moment the answer arrived: the old page never made its own read after the
    # send. Only the XHR page, which the lab reloads after it, does.
    assert app.log == (["GET", "POST", "GET", "GET"] if page == "/xhr" else ["GET", "POST", "GET"])


async def _trial(spec: Spec) -> Trial:
    async with chromium() as browser:
        prober = Prober(spec, browser, cast(faults.Targets, None), "redis://127.0.0.1:1/0")  # no fault: unused
        ttl_reads: list[int] = []

        async def observe(ctx: Any, t: Trial, turn: int, step: Any = None) -> None:  # where the TTL read comes
            t.events.append({"t": time.time(), "kind": "ttl_read", "turn": turn})
            ttl_reads.append(turn)

        prober._observe_ttl = observe  # type: ignore[method-assign]
        try:
            t = await prober.trial(Experiment("none", (), "after_ack", 2, "test"), "e1-none-after_ack-00", 1)
        finally:
            await prober.close_pool()
            prober.close()
    assert ttl_reads == [1, 2]
    return t


@pytest.mark.parametrize("page", [None, "/"], ids=["lab_page", "app_page"])
def test_after_ack_marks_the_refresh_at_the_reload_and_reads_the_ttl_after_it(app: _App, page: str | None) -> None:
    t = run_async(_trial(_spec(app, page)))
    assert t.unknown is None, t.unknown
    assert [s.outcome for s in t.sends] == ["ok", "ok"]
    kinds = [(e["kind"], e.get("turn")) for e in t.events if e["kind"] in ("refresh", "ttl_read")]
    assert kinds == [("ttl_read", 1), ("refresh", None), ("ttl_read", 2)]
    refresh_t = next(e["t"] for e in t.events if e["kind"] == "refresh")
    assert t.sends[-1].t_complete is not None and t.sends[-1].t_complete <= refresh_t
    assert t.refresh_delay_ms is not None and 0 <= t.refresh_delay_ms < 5_000
    assert t.page_after_refresh is not None and len(t.page_after_refresh) == 4
    assert app.log.count("POST") == 2


def test_old_trials_without_the_delay_still_load() -> None:
    d = Trial("x", refresh="after_ack").as_json()
    assert d["refresh_delay_ms"] is None
    del d["refresh_delay_ms"]
    assert Trial.from_json(d).refresh_delay_ms is None
