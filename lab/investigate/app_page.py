"""Driving the app's own page ([page] in the spec): type and click as a user does, take each
answer's status from the page's own request on the network, and the history from the DOM.

Both functions return the same raw dicts as the lab's page (lab/investigate/page.py), so the
prober judges either the same way. A selector that matches nothing is a spec error, reported
with the selector ("page: ..."), not a trial outcome.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from playwright.async_api import Error as PlaywrightError, Page, Response, TimeoutError as PlaywrightTimeout

from lab.investigate.spec import PageSpec, Spec

SELECTOR_TIMEOUT_MS = 5_000  # the page is up: an element that is not there by now is not coming


def _matches(path: str, method: str) -> Callable[[Response], bool]:
    return lambda r: r.request.method == method and urlsplit(r.url).path == path


async def load(page: Page, spec: Spec, navigate: Callable[[], Awaitable[Any]]) -> dict[str, Any]:
    """Navigate (open or reload) and read what the page shows once it has its history."""
    pg = spec.page
    assert pg is not None
    timeout_ms = spec.chat.timeout_s * 1000
    try:
        async with page.expect_response(_matches(spec.history.path, "GET"), timeout=timeout_ms) as info:
            await navigate()
        resp = await info.value
        status = resp.status
        if not 200 <= status < 300:
            return {
                "status": status,
                "type": resp.headers.get("content-type", ""),
                "body": (await resp.text())[:400],
                "error": None,
                "rows": None,
            }
    except PlaywrightTimeout:
        return {
            "status": None,
            "type": "",
            "body": "",
            "rows": None,
            "error": f"page: {pg.path} made no GET {spec.history.path} within {spec.chat.timeout_s:g} s",
        }
    try:
        if pg.ready:
            await page.wait_for_selector(pg.ready, state="attached", timeout=timeout_ms)
        else:
            # Rendering follows the fetch within a task or two.
            await page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
        rows = await page.eval_on_selector_all(
            pg.message, "(els, a) => els.map(e => [e.getAttribute(a) || '', e.innerText])", pg.role_attribute
        )
    except PlaywrightTimeout:
        return {
            "status": status,
            "type": "",
            "body": "",
            "rows": None,
            "error": f"page: page.ready = {pg.ready!r} never appeared after the history loaded",
        }
    parsed = [(str(role).strip(), str(text)) for role, text in rows]
    return {
        "status": status,
        "type": "",
        "body": "",
        "error": None,
        "rows": parsed[::-1] if pg.order == "newest_first" else parsed,
    }


# Type and send in the page itself, as one task: for a tab in the background, where Playwright's
# actionability checks wait for animation frames that a hidden page does not get (two tabs
# sending "at once" through fill + click went out one after the other).
_SUBMIT_JS = """([input, send, text]) => {
  const el = document.querySelector(input);
  if (!el) return false;
  el.focus(); el.value = text;
  el.dispatchEvent(new Event("input", {bubbles: true}));
  const button = send ? document.querySelector(send) : null;
  if (send && !button) return false;
  if (button) button.click(); else if (el.form) el.form.requestSubmit();
  else el.dispatchEvent(new KeyboardEvent("keydown", {key: "Enter", bubbles: true}));
  return true;
}"""


async def send(page: Page, spec: Spec, text: str, cut: bool, in_page: bool = False) -> dict[str, Any]:
    """Type ``text`` and send it; with ``cut``, reload as soon as the answer starts (the user
    refreshing mid-reply). ``ms`` is the page's request from start to the answer's first byte;
    ``start`` / ``end`` when the request left and its answer ended (epoch s). ``in_page``:
    typed and submitted by the page's own script (two tabs at once)."""
    pg = spec.page
    assert pg is not None
    timeout_ms = spec.chat.timeout_s * 1000
    t0 = time.monotonic()
    try:
        async with page.expect_response(_matches(spec.chat.path, "POST"), timeout=timeout_ms) as info:
            await _type_and_send(page, pg, text, in_page)
        resp = await info.value
    except PlaywrightTimeout as exc:
        return _no_answer(t0, spec, exc)
    timing = resp.request.timing
    ms = timing["responseStart"] if timing.get("responseStart", -1) >= 0 else (time.monotonic() - t0) * 1000
    start = timing["startTime"] / 1000 if timing.get("startTime", -1) > 0 else None
    out: dict[str, Any] = {
        "status": resp.status,
        "type": resp.headers.get("content-type", ""),
        "body": "",
        "ms": ms,
        "error": None,
        "cut": None,
        "start": start,
    }
    if cut:
        # The answer has started: refresh now, as the user who does not wait for the reply.
        out["cut"] = True
        return out
    try:
        out["body"] = await resp.text()
    except PlaywrightError as exc:  # the connection broke mid-body: the answer's outcome is unknown
        out["status"], out["error"] = None, f"the answer broke off: {exc}"
        return out
    end_ms = resp.request.timing.get("responseEnd", -1)
    out["end"] = start + end_ms / 1000 if start is not None and end_ms >= 0 else time.time()
    if pg.idle:
        try:
            await page.wait_for_selector(pg.idle, state="attached", timeout=timeout_ms)
        except PlaywrightTimeout:
            out["error"] = f"page: page.idle = {pg.idle!r} never appeared after the answer"
    return out


async def _type_and_send(page: Page, pg: PageSpec, text: str, in_page: bool) -> None:
    if in_page:
        if not await page.evaluate(_SUBMIT_JS, [pg.input, pg.send, text]):
            raise PlaywrightTimeout(f"waiting for locator {pg.input!r} / {pg.send!r}")
        return
    await page.fill(pg.input, text, timeout=SELECTOR_TIMEOUT_MS)
    if pg.send:
        await page.click(pg.send, timeout=SELECTOR_TIMEOUT_MS)
    else:
        await page.press(pg.input, "Enter", timeout=SELECTOR_TIMEOUT_MS)


def _no_answer(t0: float, spec: Spec, exc: Exception) -> dict[str, Any]:
    """No POST answered: the page's selectors found nothing (the spec is wrong), or no answer came."""
    pg = spec.page
    assert pg is not None
    if "waiting for" in str(exc) and "locator" in str(exc):
        return _failed(
            t0,
            f"page: no element for page.input = {pg.input!r}"
            + (f" / page.send = {pg.send!r}" if pg.send else "")
            + " (or it stayed disabled)",
        )
    return _failed(
        t0,
        f"no POST {spec.chat.path} answered within {spec.chat.timeout_s:g} s "
        "(if the page never sent one: check page.input / page.send)",
    )


def _failed(t0: float, error: str) -> dict[str, Any]:
    return {"status": None, "type": "", "body": "", "ms": (time.monotonic() - t0) * 1000, "error": error, "cut": None}
