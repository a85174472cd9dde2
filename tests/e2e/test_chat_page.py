"""The chat page in Debian Chromium against the real stack: memory shows on the page, and so
does its loss."""

from __future__ import annotations

import json
from pathlib import Path

import redis
from playwright.sync_api import Browser, BrowserContext, Page, expect

from lab.stack.native import NativeStack
from lab.stack.toxiproxy import Toxiproxy
from services.chat.llm import GREETING

ARTIFACTS = Path("test-results")


def _say(page: Page, text: str) -> None:
    n = page.get_by_test_id("message").count()
    page.get_by_test_id("composer-input").fill(text)
    page.get_by_test_id("composer-input").press("Enter")
    # Wait for the reply bubble to be settled (saved or not saved), not for a fixed time.
    expect(page.get_by_test_id("message")).to_have_count(n + 2)
    expect(page.get_by_test_id("message").nth(n + 1)).to_have_attribute("data-state", "saved")


def _last_reply(page: Page) -> str:
    return page.locator("[data-testid=message][data-role=assistant] [data-testid=message-text]").last.inner_text()


def _context(browser: Browser, stack: NativeStack, *defects: str) -> BrowserContext:
    return browser.new_context(base_url=stack.cfg.chat_url, extra_http_headers={"X-Lab-Defects": ",".join(defects)})


def test_the_page_remembers_across_a_refresh(browser: Browser, lab_stack: NativeStack) -> None:
    ctx = _context(browser, lab_stack)
    page = ctx.new_page()
    page.goto("/")
    expect(page.get_by_test_id("history-status")).to_have_attribute("data-state", "empty")
    _say(page, "Hi, my name is Ada")
    _say(page, "I like chess")
    _say(page, "What is my name?")
    assert _last_reply(page) == "Your name is Ada."
    page.reload()
    expect(page.get_by_test_id("history-status")).to_have_attribute("data-state", "loaded")
    expect(page.get_by_test_id("message")).to_have_count(6)
    _say(page, "What do I like?")
    assert _last_reply(page) == "You told me you like chess."
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "chat-remembers.png"))
    ctx.close()


def test_session_cookie_defect_forgets_after_a_browser_restart(browser: Browser, lab_stack: NativeStack) -> None:
    """A browser restart keeps only persistent cookies: without Max-Age the session is gone and
    the bot greets the user as a stranger."""
    ctx = _context(browser, lab_stack, "session_cookie")
    page = ctx.new_page()
    page.goto("/")
    _say(page, "Hi, my name is Ada")
    persistent = [c for c in ctx.cookies() if c["expires"] != -1]
    assert persistent == [], "the session cookie must have no expiry"
    ctx.close()
    restarted = _context(browser, lab_stack, "session_cookie")
    restarted.add_cookies(persistent)  # what survives a browser restart
    page = restarted.new_page()
    page.goto("/")
    expect(page.get_by_test_id("history-status")).to_have_attribute("data-state", "empty")
    _say(page, "hello again")
    assert _last_reply(page) == GREETING
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "chat-amnesia.png"))
    restarted.close()


def test_not_saved_message_is_retried_with_the_same_id(
    browser: Browser, lab_stack: NativeStack, toxi: Toxiproxy, redis_direct: "redis.Redis[bytes]"
) -> None:
    ctx = _context(browser, lab_stack)
    page = ctx.new_page()
    page.goto("/")
    _say(page, "first")
    toxi.set_enabled("redis", False)
    page.get_by_test_id("composer-input").fill("second")
    page.get_by_test_id("composer-input").press("Enter")
    failed = page.locator("[data-testid=message][data-state=not-saved]")
    expect(failed).to_have_count(1)
    expect(failed.get_by_test_id("message-state")).to_contain_text("not saved (store_unavailable)")
    mid = failed.get_attribute("data-id")
    toxi.set_enabled("redis", True)
    failed.get_by_test_id("retry-button").click()
    expect(page.locator(f'[data-testid=message][data-id="{mid}"][data-role=assistant]')).to_have_attribute(
        "data-state", "saved"
    )
    sid = next(c["value"] for c in ctx.cookies() if c["name"] == "session_id")
    rows = [json.loads(x) for x in redis_direct.lrange(f"chat:{sid}", 0, -1)]
    assert [(r["role"]) for r in rows if r["id"] == mid] == ["user", "assistant"]
    ctx.close()


def test_a_reply_cut_mid_stream_retries_its_message(browser: Browser, lab_stack: NativeStack) -> None:
    """A stream that ends without its end event leaves the message shown saved and the reply
    "not saved (stream cut)": the reply's retry re-sends the user's text with the same id (it
    once re-sent the partial reply as a user message)."""
    ctx = _context(browser, lab_stack)
    page = ctx.new_page()
    page.goto("/?stream=1")
    cut = '{"type": "token", "text": "Nice to"}\n'
    page.route("**/chat", lambda route: route.fulfill(status=200, body=cut, content_type="application/x-ndjson"))
    page.get_by_test_id("composer-input").fill("my name is Cutty")
    page.get_by_test_id("composer-input").press("Enter")
    reply = page.locator("[data-testid=message][data-role=assistant]")
    expect(reply.get_by_test_id("message-state")).to_have_text("not saved (stream cut)")
    mid = reply.get_attribute("data-id")
    page.unroute("**/chat")
    reply.get_by_test_id("retry-button").click()
    expect(page.locator(f'[data-testid=message][data-id="{mid}"][data-role=assistant]')).to_have_attribute(
        "data-state", "saved"
    )
    expect(page.get_by_test_id("message")).to_have_count(2)
    assert page.locator("[data-testid=message][data-role=user] [data-testid=message-text]").inner_text() == (
        "my name is Cutty"
    )
    ctx.close()


# Every state the reply's element passes through, with its text then: recorded by the page as it
# changes (a MutationObserver runs on every change), so no state is missed however slowly the
# test's own polling comes round on a busy machine.
_WATCH_REPLY = """() => {
  window.__replyStates = [];
  new MutationObserver(() => {
    const m = document.querySelector('[data-testid=message][data-role=assistant]');
    if (!m) return;
    const text = m.querySelector('[data-testid=message-text]')?.innerText ?? '';
    const last = window.__replyStates[window.__replyStates.length - 1];
    if (!last || last[0] !== m.dataset.state || last[1] !== text) window.__replyStates.push([m.dataset.state, text]);
  }).observe(document.body, {subtree: true, childList: true, attributes: true, characterData: true});
}"""


def test_streamed_reply_renders_as_it_arrives(browser: Browser, lab_stack: NativeStack) -> None:
    ctx = browser.new_context(base_url=lab_stack.cfg.chat_url, extra_http_headers={"X-Lab-Token-Delay-Ms": "60"})
    page = ctx.new_page()
    page.goto("/?stream=1")
    page.evaluate(_WATCH_REPLY)
    page.get_by_test_id("composer-input").fill("my name is Streamy")
    page.get_by_test_id("composer-input").press("Enter")
    reply = page.locator("[data-testid=message][data-role=assistant]")
    expect(reply).to_have_attribute("data-state", "saved")
    full = reply.get_by_test_id("message-text").inner_text()
    states = page.evaluate("() => window.__replyStates")
    partial = [text for state, text in states if state == "streaming" and text]
    # Seen mid-stream: the text grew piece by piece while streaming, each a prefix of the whole
    # (the last token may render before the stream's end event flips the state: the whole text).
    assert all(full.startswith(x) for x in partial), (states, full)
    assert len([x for x in partial if len(x) < len(full)]) >= 2, (states, full)
    ctx.close()
