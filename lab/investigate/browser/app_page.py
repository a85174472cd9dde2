"""Driving the app's own page ([page] in the spec): type and click as a user does, take each
answer's status from the page's own request on the network, and the history from the DOM.

The functions return the same raw dicts as the lab's page (lab/investigate/browser/page.py), so the
prober judges either the same way. A selector that matches nothing is a spec error, reported
with the selector ("page: ..."), not a trial outcome.
"""

from __future__ import annotations


import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol
from urllib.parse import urlsplit

from playwright.async_api import Error as PlaywrightError, Page, Request, Response, TimeoutError as PlaywrightTimeout

from lab.driver.navigate import TRIES, steady
from lab.common.html_select import role_value
from lab.investigate.browser import forms
from lab.investigate.evidence.answers import Answer, HistoryRead, path_pattern
from lab.model.checker import NETWORK_CHANGED
from lab.investigate.browser.page import Shown, shown_rows
from lab.investigate.spec.parse import PageSpec, Spec

SELECTOR_TIMEOUT_MS = 5_000  # the page is up: an element that is not there by now is not coming
# What a send's error begins with when the app's page sent nothing at all (no POST, no frame):
# the lab's step failed, so the trial is unknown (lab.investigate.run.blackbox), never "the app
# gave no answer".
NOT_SENT = "the page sent no"


class Req(Protocol):
    """A browser request, as either of Playwright's APIs (async here, sync in the pytest plugin) gives it."""

    @property
    def method(self) -> str: ...
    @property
    def url(self) -> str: ...


def request_to(path: str, method: str) -> Callable[[Req], bool]:
    """A request of the page to ``path`` ({session}: any one segment) by ``method``."""
    pattern = path_pattern(path)
    return lambda r: r.method == method and pattern.match(urlsplit(r.url).path) is not None


def matches(path: str, method: str) -> Callable[[Response], bool]:
    """A response to the page's request to ``path``."""
    to = request_to(path, method)
    return lambda r: to(r.request)


async def load(
    page: Page,
    spec: Spec,
    navigate: Callable[[], Awaitable[Any]],
    counts: Callable[[], bool] = lambda: True,
    timeout_s: float | None = None,
) -> HistoryRead:
    """Navigate (open or reload) and read what the page shows once it has its history. The
    first GET of the history answered once ``navigate`` began is the page's own, unless
    ``counts`` says not yet (a navigation already under way inside ``navigate``: the GETs the
    old page made before it are not the reload's). ``start``: when that GET left (epoch s).
    A GET the browser failed as the machine's network changed is read again by reloading the
    page (a page load: idempotent), up to ``TRIES`` loads; any other failure is named."""
    pg = spec.page
    assert pg is not None
    wait_s = timeout_s or spec.chat.timeout_s
    for attempt in range(1, TRIES + 1):
        got = await _history_get(page, spec, navigate, counts, wait_s)
        if isinstance(got, Response):
            return await _read(page, spec, got)
        if got is None:
            error = f"page: {pg.path} made no GET {spec.history.path} within {wait_s:g} s"
        else:
            error = f"page: {pg.path}'s GET {spec.history.path} failed in the browser: {got}"
            if NETWORK_CHANGED in got and attempt < TRIES:
                navigate = lambda: steady(lambda: forms.reload(page))  # noqa: E731 - the same page, loaded again
                continue
        break
    return {"status": None, "type": "", "body": "", "rows": None, "error": error}


async def _history_get(
    page: Page, spec: Spec, navigate: Callable[[], Awaitable[Any]], counts: Callable[[], bool], wait_s: float
) -> Response | str | None:
    """The page's GET of its history once ``navigate`` began: its response, the browser's
    reason it failed, or None (none within ``wait_s``)."""
    history = request_to(spec.history.path, "GET")
    got: asyncio.Future[Response | str] = asyncio.get_running_loop().create_future()

    def answered(r: Response) -> None:
        if not got.done() and history(r.request) and counts():
            got.set_result(r)

    def failed(r: Request) -> None:
        if not got.done() and history(r) and counts():
            got.set_result(r.failure or "failed")

    page.on("response", answered)
    page.on("requestfailed", failed)
    deadline = time.monotonic() + wait_s
    try:
        await asyncio.wait_for(navigate(), wait_s)
        await asyncio.wait({got}, timeout=max(0.0, deadline - time.monotonic()))  # never cancels ``got``
    except (asyncio.TimeoutError, PlaywrightTimeout):
        pass
    finally:
        page.remove_listener("response", answered)
        page.remove_listener("requestfailed", failed)
    return got.result() if got.done() else None


async def _read(page: Page, spec: Spec, resp: Response) -> HistoryRead:
    """What the page shows once its history GET was answered ``resp``."""
    start = _started(resp)
    if not 200 <= resp.status < 300:
        return {
            "status": resp.status,
            "type": resp.headers.get("content-type", ""),
            "body": (await resp.text())[:400],
            "error": None,
            "rows": None,
            "start": start,
        }
    shown = await _shown(page, spec, resp.status)
    shown["start"] = start
    return shown


async def _shown(page: Page, spec: Spec, status: int) -> HistoryRead:
    """The rows the page renders once its history has loaded."""
    pg = spec.page
    assert pg is not None
    try:
        if pg.ready:
            await page.wait_for_selector(pg.ready, state="attached", timeout=spec.chat.timeout_s * 1000)
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
    roles = (spec.history.user_role, spec.history.assistant_role)
    parsed = [(role_value(str(role), pg.role_attribute, roles), str(text)) for role, text in rows]
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


async def send(page: Page, spec: Spec, text: str, cut: bool, in_page: bool = False) -> Answer:
    """Type ``text`` and send it; with ``cut``, reload as soon as the answer starts (the user
    refreshing mid-reply). ``ms`` is the page's request from start to the answer's first byte;
    ``start`` / ``end`` when the request left and its answer ended (epoch s). ``in_page``:
    typed and submitted by the page's own script (two tabs at once)."""
    t0 = time.monotonic()
    before = await rendered(page, spec, text) if spec.chat.reply_from == "history" else None
    resp = await post(page, spec, text, in_page, matches(spec.chat.path, "POST"), t0)
    if isinstance(resp, dict):
        return resp
    out = head(resp, t0)
    if cut:
        # The answer has started: refresh now, as the user who does not wait for the reply.
        out["cut"] = True
        return out
    return await polled(page, spec, text, before, await finish(page, spec, resp, out))


RENDER_POLL_S = 0.05  # [chat] reply_from = "history": how often the page's rendering is read for the reply


async def rendered(page: Page, spec: Spec, text: str, before: int = -1) -> Shown:
    """What the page renders now of the reply to ``text`` (page.shown_rows)."""
    rows = (await _shown(page, spec, 200))["rows"]
    if rows is None:
        return {"replies": -1, "asked": False, "answered": False}
    names = {spec.history.user_role: "user", spec.history.assistant_role: "assistant"}
    return shown_rows([(names.get(role, role), content) for role, content in rows], text, before)


async def polled(page: Page, spec: Spec, text: str, before: Shown | None, out: Answer) -> Answer:
    """[chat] reply_from = "history" on the app's own page, which polls for the reply itself: a
    send the app took (2xx) answered when what the page renders answers it (page.shown_rows,
    ``before``: what it rendered before the send), read every RENDER_POLL_S; none within [chat]
    timeout_s: not answered. ``before`` None: not polled for, ``out`` as it is."""
    if before is None or out["status"] is None or not 200 <= out["status"] < 300:
        return out
    deadline = time.monotonic() + spec.chat.timeout_s
    while not (await rendered(page, spec, text, before["replies"]))["answered"]:
        if time.monotonic() > deadline:
            out["status"], out["error"] = None, f"the page showed no reply within {spec.chat.timeout_s} s of the answer"
            return out
        await asyncio.sleep(RENDER_POLL_S)  # bounded by the deadline above
    out["end"] = time.time()
    return out


async def post(
    page: Page, spec: Spec, text: str, in_page: bool, is_post: Callable[[Response], bool], t0: float
) -> Response | Answer:
    """The page's POST of ``text``, answered (its body not read yet), or the raw failure."""
    pg = spec.page
    assert pg is not None
    # The page's requests to the chat path, watched beside the answer: a POST that never left
    # the page is the lab's failed step (a click lost on a loaded machine), not an app that gave
    # no answer -- both leave "no answer", and only this tells them apart.
    to_chat, left = request_to(spec.chat.path, "POST"), []
    await forms.off_an_answer_page(page, pg)
    before = page.url

    def leaving(r: Request) -> None:
        if to_chat(r):
            left.append(r)
            if r.is_navigation_request():  # a form's POST: the page becomes its answer, from now
                # (finish: unless a redirect led back to a page of its own); sent from an answer
                # page (one showing the form again), back is still the page before the first
                forms.back.setdefault(page, before)

    page.on("request", leaving)
    forms.sending[page] = before
    try:
        async with page.expect_response(is_post, timeout=spec.chat.timeout_s * 1000) as info:
            await type_and_send(page, pg, text, in_page)
        return await info.value
    except PlaywrightTimeout as exc:
        return no_answer(t0, spec, exc, sent=bool(left))
    finally:
        forms.sending.pop(page, None)
        page.remove_listener("request", leaving)


def _started(resp: Response) -> float | None:
    """When the response's request left the page (epoch s), if the browser timed it."""
    timing = resp.request.timing
    return timing["startTime"] / 1000 if timing.get("startTime", -1) > 0 else None


def head(resp: Response, t0: float) -> Answer:
    """An answer as far as its first byte: status, type, ``ms`` to it and when the request left."""
    timing = resp.request.timing
    ms = timing["responseStart"] if timing.get("responseStart", -1) >= 0 else (time.monotonic() - t0) * 1000
    start = _started(resp)
    return {
        "status": resp.status,
        "type": resp.headers.get("content-type", ""),
        "body": "",
        "ms": ms,
        "error": None,
        "cut": None,
        "start": start,
    }


async def finish(page: Page, spec: Spec, resp: Response, out: Answer) -> Answer:
    """The answer's body and end, then the page idle again (``page.idle``)."""
    pg = spec.page
    assert pg is not None
    try:
        if 300 <= resp.status < 400:  # a form's post/redirect/get: the page the redirect led to
            resp = await forms.redirected(page, resp, spec.chat.timeout_s)
            out |= {"status": resp.status, "type": resp.headers.get("content-type", ""), "redirected": True}
            out["url"] = resp.url
        out["body"] = await resp.text()
        if not (resp.request.method == "POST" and resp.request.is_navigation_request()):
            forms.back.pop(page, None)  # a redirect led to a page of its own
    except PlaywrightError as exc:  # the connection broke mid-body: the answer's outcome is unknown
        out["status"], out["error"] = None, f"the answer broke off: {exc}"
        return out
    # Ended with the last answer's body (the redirected page's: timed from its own request).
    start, end_ms = _started(resp) or out.get("start"), resp.request.timing.get("responseEnd", -1)
    out["end"] = start + end_ms / 1000 if start is not None and end_ms >= 0 else time.time()
    if pg.idle:
        try:
            await page.wait_for_selector(pg.idle, state="attached", timeout=spec.chat.timeout_s * 1000)
        except PlaywrightTimeout:
            out["error"] = f"page: page.idle = {pg.idle!r} never appeared after the answer"
    return out


async def type_and_send(page: Page, pg: PageSpec, text: str, in_page: bool) -> None:
    if in_page:
        if not await page.evaluate(_SUBMIT_JS, [pg.input, pg.send, text]):
            raise PlaywrightTimeout(f"waiting for locator {pg.input!r} / {pg.send!r}")
        return
    await page.fill(pg.input, text, timeout=SELECTOR_TIMEOUT_MS)
    if pg.send:
        await page.click(pg.send, timeout=SELECTOR_TIMEOUT_MS)
    else:
        await page.press(pg.input, "Enter", timeout=SELECTOR_TIMEOUT_MS)


def no_answer(t0: float, spec: Spec, exc: Exception, sent: bool = True) -> Answer:
    """No POST answered: the page's selectors found nothing (the spec is wrong), the page sent
    no request (the lab's step failed: NOT_SENT; ``sent``: where the lab watched for one), or
    the app gave no answer."""
    pg = spec.page
    assert pg is not None
    if "waiting for" in str(exc) and "locator" in str(exc):
        return _failed(
            t0,
            f"page: no element for page.input = {pg.input!r}"
            + (f" / page.send = {pg.send!r}" if pg.send else "")
            + " (or it stayed disabled)",
        )
    if not sent:
        return _failed(
            t0,
            f"{NOT_SENT} POST {spec.chat.path} within {spec.chat.timeout_s:g} s of typing and sending "
            "(every time: check page.input / page.send)",
        )
    return _failed(t0, f"no POST {spec.chat.path} answered within {spec.chat.timeout_s:g} s")


def _failed(t0: float, error: str) -> Answer:
    return {"status": None, "type": "", "body": "", "ms": (time.monotonic() - t0) * 1000, "error": error, "cut": None}
