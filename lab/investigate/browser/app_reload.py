"""The user who refreshes the moment the answer arrives, on the app's own page ([page] in the
spec, over HTTP): the page reloads itself as the answer comes in, with no round trip to the lab
in between (lab.investigate.browser.app_page drives the rest of the page)."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any, cast

from playwright.async_api import Page, Response

from lab.driver.navigate import steady
from lab.investigate.browser.app_page import finish, head, load, matches, polled, post, rendered
from lab.investigate.browser.forms import reload
from lab.investigate.browser.page import ANSWER_KEY, LOST_ANSWER, TAKE_ANSWER_JS
from lab.investigate.evidence.answers import Answer, HistoryRead
from lab.investigate.spec.parse import Spec

# The user who refreshes the moment the answer arrives, on the app's own page: an init script of
# the context wraps the page's fetch. Inert unless armed for one send (sessionStorage: this tab
# only); armed, the page's POST to the chat path, once its whole body is read, leaves its
# answer in sessionStorage and starts the reload in the same task -- no round trip to the lab
# between the two. The page's own code never gets that answer (its promise stays pending: the
# page is going away), so the old page sends nothing more before the reload. Fetch only: an
# XHR page the lab reloads itself after the answer (send_then_reload).
_ARM = "__chaoslab_reload_armed"
_RELOAD_HOOK_JS = """(() => {
  const ARM = __ARM__, ANSWER = __ANSWER__, PATH = __PATH__, orig = window.fetch;
  if (typeof orig !== "function") return;
  const now = () => Date.now() / 1000;  // the wall clock, as Redis's MONITOR dates (page.py: skew)
  // The armed value is the delay (ms) between the answer and the reload (lab window); at 0 the
  // page never gets the answer, later it does, as a user reads it before refreshing.
  const delay = () => { try { return Number(sessionStorage.getItem(ARM)); } catch (e) { return 0; } };
  const armed = () => { try { return sessionStorage.getItem(ARM) !== null; } catch (e) { return false; } };
  const isChat = (input, init) => {
    try {
      const req = input instanceof Request ? input : null;
      const method = String((init && init.method) || (req ? req.method : "GET")).toUpperCase();
      return method === "POST" && new URL(req ? req.url : String(input), location.href).pathname === PATH;
    } catch (e) { return false; }
  };
  window.fetch = function (input, init) {
    const answer = orig.apply(window, arguments);
    if (!armed() || !isChat(input, init)) return answer;
    return answer.then(async resp => {
      if (!armed()) return resp;  // disarmed meanwhile: the lab reloads the page itself
      const out = {status: resp.status, type: resp.headers.get("content-type") || "", body: "", error: null};
      try { out.body = await resp.clone().text(); }
      catch (e) { out.status = null; out.error = "the answer broke off: " + e; }
      out.end = now();
      const wait = delay();
      sessionStorage.setItem(ANSWER, JSON.stringify(out));
      sessionStorage.removeItem(ARM);
      if (wait > 0) { setTimeout(() => location.reload(), wait); return resp; }
      location.reload();
      return new Promise(() => {});
    });
  };
})();"""


def reload_hook(spec: Spec) -> str:
    """The init script of a context driving the app's page (see _RELOAD_HOOK_JS)."""
    return (
        _RELOAD_HOOK_JS.replace("__ARM__", json.dumps(_ARM))
        .replace("__ANSWER__", json.dumps(ANSWER_KEY))
        .replace("__PATH__", json.dumps(spec.chat.path))
    )


async def send_then_reload(page: Page, spec: Spec, text: str, delay_ms: int = 0) -> tuple[Answer, HistoryRead]:
    """Type ``text`` and send it, the page armed to reload itself the moment the answer has
    arrived (reload_hook); the answer (its body from sessionStorage: the response's own may be
    gone with the page that read it) and the reloaded page's first history read (as ``load``).
    Where the POST is not the page's fetch (XHR), or never answered, the lab reloads it after --
    as where the page polls for the reply ([chat] reply_from): the answer is its showing, not the
    POST's, so the hook stays unarmed and the lab reloads once the page renders it."""
    state = {"hooked": False, "reloading": False, "navigated": False}
    is_post, poll = matches(spec.chat.path, "POST"), spec.chat.reply_from == "history"

    def navigated(frame: Any) -> None:
        # A delayed reload: the page has its answer and may read the history itself before the
        # reload (many pages do); only the reloaded document's read counts.
        if frame == page.main_frame and state["hooked"]:
            state["navigated"] = True

    def posted(r: Response) -> bool:  # in the event's listener: before any later response
        if not is_post(r):
            return False
        state["hooked"] = r.request.resource_type == "fetch" and not poll
        return True

    out = cast(Answer, {})  # the answer's head, then its body: filled as they come

    async def navigate() -> None:
        before = await rendered(page, spec, text) if poll else None
        if not poll:
            await page.evaluate("([k, d]) => sessionStorage.setItem(k, String(d))", [_ARM, delay_ms])
        t0 = time.monotonic()
        resp = await post(page, spec, text, False, posted, t0)
        out.update(resp if isinstance(resp, dict) else head(resp, t0))
        if state["hooked"]:
            return  # the page is reloading itself
        await page.evaluate("k => sessionStorage.removeItem(k)", _ARM)
        if not isinstance(resp, dict):
            out.update(await polled(page, spec, text, before, await finish(page, spec, resp, out)))
        if delay_ms:  # the user reading the answer before refreshing (lab window)
            await asyncio.sleep(delay_ms / 1000)
        state["reloading"] = True
        await steady(lambda: reload(page))  # a page load, tried again if the machine's network changed

    # The send and the reload: up to a timeout each.
    timeout_s = 2 * spec.chat.timeout_s + delay_ms / 1000
    if delay_ms:
        page.on("framenavigated", navigated)
    try:
        counts = (
            (lambda: state["navigated"] or state["reloading"])
            if delay_ms
            else (lambda: state["hooked"] or state["reloading"])
        )
        loaded = await load(page, spec, navigate, counts, timeout_s)
    finally:
        if delay_ms:
            page.remove_listener("framenavigated", navigated)
    if state["hooked"]:
        stored = await page.evaluate(TAKE_ANSWER_JS)
        out.update(cast(Answer, stored) if stored else {"status": None, "error": LOST_ANSWER["error"]})
    return out, loaded
