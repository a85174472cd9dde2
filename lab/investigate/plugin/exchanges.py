"""What one of the user's own requests says, for the recorder (lab.investigate.plugin.recorder):
a chat POST and its answer as a send, the answer a redirect led to, and whether a request is a
refresh. Sync Playwright objects (pytest-playwright's API), read once the test is over."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

from playwright.sync_api import BrowserContext, Error as PlaywrightError, Page, Request, Response

from lab.investigate.browser import identity as who
from lab.investigate.browser.app_frames import Frame
from lab.investigate.browser.identity import field_id
from lab.investigate.plugin import frames
from lab.investigate.evidence.answers import led_elsewhere
from lab.investigate.browser.settle import POLL_S
from lab.investigate.evidence.rows import json_path
from lab.investigate.spec.parse import Spec
from lab.investigate.spec.shapes import follow_pattern
from lab.investigate.browser.page import shown
from lab.model.history import Send


def send_of(spec: Spec, req: Request, resp: Response | None, ended: float | None = None, failed: bool = False) -> Send:
    """The chat POST ``req`` and its answer ``resp`` (None: the request failed) as a send:
    ok (2xx, after a redirect only to the conversation's page), fail (4xx), info (5xx, no
    answer, a redirect elsewhere). Dated by the answer's first byte, its status then known; a
    stream by its end: ``ended``, when its end event reached the page (frames.stream_end), else
    its close. ``failed``: the request failed after its answer came (its body cut)."""
    field, body = spec.chat.message_field, _body(spec, req.post_data)
    text = str(body.get(field, "")) if body is not None else req.post_data or ""
    # The message's id, where the API takes one ([chat] id_field) and the test sent it: the
    # history's rows carry it, and the checker places them by it.
    mid = field_id(body, spec.chat.id_field) if spec.chat.id_field else None
    timing = req.timing
    start = timing["startTime"] / 1000 if timing.get("startTime", -1) > 0 else time.time()
    ms = timing["responseStart"] if timing.get("responseStart", -1) >= 0 else None
    end = start + timing["responseEnd"] / 1000 if timing.get("responseEnd", -1) >= 0 else time.time()
    s = Send(mid or "", text, 0, ms=ms, t_invoke=start)
    if resp is None:
        s.complete("info", None, req.failure or "the request failed", end)
        return s
    # The answer came with its first byte (a send's outcome, as the lab's own page logs it: a
    # stream's with its first chunk), not with its body's end: a user's test that awaits
    # fetch() has its status then and may send the next message before that body is in --
    # measured 2026-12-04, answers' bodies 40 ms behind their headers on gunicorn, and turns
    # the next send carried counted as not yet acknowledged.
    # A stream is answered when it ends, as lab investigate dates it (its end event, or the
    # close): a reply stored as its stream ends was stored before the answer, not after its
    # first chunk; one stored after the end event and before the close, after it.
    streamed = _streams(spec, body, resp)
    answered = min(end, ended or end) if streamed else end if ms is None else start + ms / 1000
    s.streamed = streamed
    # Never ended (a reload mid-reply): begun, then cut. Chromium may date a body's end at its
    # headers when the page left before the rest (seen 2026-12-07: responseEnd 3 ms after
    # responseStart for an NDJSON reply a reload cut 90 ms on), so the request's failure, with
    # no end event seen, says so too.
    if streamed and ms is not None and (timing.get("responseEnd", -1) < 0 or (failed and ended is None)):
        s.cut, answered = True, start + ms / 1000
    final = after_redirects(resp)
    if final is None:
        s.complete("info", resp.status, f"HTTP {resp.status}, and the request it redirected to failed", answered)
        return s
    status = final.status
    said = f"HTTP {status}" if final is resp else f"HTTP {resp.status} -> {status}"
    if final is not resp and (where := led_elsewhere(spec, final.request.url)) is not None:
        s.complete("info", status, f"{said} at {where}, not the conversation's page", answered)
        return s
    if 200 <= status < 300 and streamed and (unended := _unended(spec, final)):
        s.complete("info", status, unended, answered)
    elif 200 <= status < 300:
        s.reply = _reply(spec, final)
        s.complete("ok", status, said, answered)
    else:
        s.html = "text/html" in (final.headers.get("content-type") or "")
        s.complete("fail" if 400 <= status < 500 else "info", status, said, answered)
    return s


def _body(spec: Spec, data: str | None) -> dict[str, Any] | None:
    """A chat POST's fields (a form's: each its first value); None where it is neither."""
    try:
        if spec.chat.body == "form":
            return {k: v[0] for k, v in parse_qs(data or "").items()}
        got = json.loads(data or "{}")
    except ValueError:
        return None
    return got if isinstance(got, dict) else None


def after_redirects(resp: Response) -> Response | None:
    """The answer a redirect led to: a form's POST answered 303 and the page's GET after it
    answered 200 (post/redirect/get: the user is shown the conversation, the send answered), as
    the browser followed it; None where a request of the chain failed."""
    req = resp.request
    while 300 <= resp.status < 400 and req.redirected_to is not None:
        req = req.redirected_to
        got = req.response()
        if got is None:
            return None
        resp = got
    return resp


def is_refresh(req: Request, main_frame: Any, to_chat: Callable[[Request], bool]) -> bool:
    """Whether ``req`` is a refresh: the page's document asked for again -- a GET navigation of
    its main frame, not one a send's redirect led to (post/redirect/get: the page the send
    answered with). Dated by its request, not by the navigation's commit: a server-rendered
    history is that document, answered before the commit; a pushState asks for nothing."""
    if req.method != "GET" or not req.is_navigation_request() or req.frame != main_frame:
        return False
    first = req
    while first.redirected_from is not None:
        first = first.redirected_from
    return not to_chat(first)


def _streams(spec: Spec, body: dict[str, Any] | None, resp: Response) -> bool:
    """The answer streams: an event stream, or a chat the spec says streams ([stream]) -- always,
    or as this request asked (its body holds the spec's stream request)."""
    if spec.stream is not None and spec.stream.follow:
        return False  # the POST's answer only names the reply's stream (followed_answer)
    if (resp.headers.get("content-type") or "").startswith("text/event-stream"):
        return True
    asked = spec.stream.request if spec.stream is not None else None
    return asked is not None and (not asked or (body is not None and all(body.get(k) == v for k, v in asked.items())))


def _unended(spec: Spec, resp: Response) -> str | None:
    """Why a stream is no answer: its body never carried the app's end event ([stream] end)."""
    if spec.stream is None or not spec.stream.end:
        return None
    try:
        text = resp.text()
    except PlaywrightError:
        return None  # the body gone with a page the test reloaded: its end unknown, not absent
    return None if spec.stream.end in text else f"the stream ended without its end event ({spec.stream.end!r})"


def _reply(spec: Spec, resp: Response) -> str | None:
    if not spec.chat.reply_path or spec.stream is not None:
        return None
    try:  # the body may be gone with a page the test reloaded at once: the reply unknown
        return str(json_path(json.loads(resp.text()), spec.chat.reply_path))
    except (PlaywrightError, ValueError, KeyError):
        return None


# A history read the page made: (when it left, when its answer ended -- the browser's clock --, its body).
Read = tuple[float, float, str]


def read_times(resp: Response) -> tuple[float, float] | None:
    """When a read left and when its answer ended, by the browser's own record (None: not known)."""
    timing = resp.request.timing
    if timing.get("startTime", -1) <= 0 or timing.get("responseEnd", -1) < 0:
        return None
    start = timing["startTime"] / 1000
    return start, start + timing["responseEnd"] / 1000


def polled_answers(spec: Spec, sends: list[Send], reads: list[Read]) -> None:
    """[chat] reply_from = "history": a send the app took (2xx) is answered by the first of the
    page's history reads ending after its answer that answers it, by lab investigate's own rule
    (lab.investigate.browser.page.shown; ``before``: the last read ended before the send). None
    such: the reply never showed the user -- no answer."""
    ordered = sorted(reads, key=lambda r: r[1])
    for s in sends:
        if s.outcome != "ok" or s.t_complete is None:
            continue
        before = [shown(spec, body, s.text)["replies"] for _, end, body in ordered if end <= s.t_invoke]
        prior = before[-1] if before else -1
        at = next(
            (end for _, end, body in ordered if end >= s.t_complete and shown(spec, body, s.text, prior)["answered"]),
            None,
        )
        if at is None:
            s.outcome, s.reason = "info", f"HTTP {s.status}, and no read of the history after it showed its reply"
        else:
            s.t_complete, s.ms = at, round((at - s.t_invoke) * 1000, 1)


def followed_answer(
    spec: Spec, s: Send, posted: str | None, follows: list[Request], ended: Callable[[str, float], float | None]
) -> None:
    """[stream] follow: a send the app took (2xx) is answered by the end event of the stream its
    answer names (``posted``: that answer's body; ``follows``: the page's GETs of the follow
    path, in order; ``ended``: when a URL's end event reached the page, frames.stream_end), as
    lab investigate's own page reads it; cut where the page left that stream before its end
    (a reload); no answer where it named none, none was opened, or it ended without its end."""
    assert spec.stream is not None and spec.stream.follow
    if s.outcome != "ok":
        return
    try:
        turn = json_path(json.loads(posted or ""), spec.stream.follow_id)
    except (ValueError, KeyError):
        turn = None
    if turn is None or isinstance(turn, (dict, list)):
        s.outcome, s.reason = (
            "info",
            f"HTTP {s.status}, and its answer names no {spec.stream.follow_id} (the reply's stream)",
        )
        return
    path = follow_pattern(spec.stream.follow, turn)
    assert path is not None
    req = next((r for r in follows if path.match(urlsplit(r.url).path)), None)
    if req is None:
        s.outcome, s.reason = (
            "info",
            f"HTTP {s.status}, and the page opened no stream of its reply ({spec.stream.follow})",
        )
        return
    s.streamed = True
    timing = req.timing
    start = timing["startTime"] / 1000 if timing.get("startTime", -1) > 0 else s.t_invoke
    first = start + timing["responseStart"] / 1000 if timing.get("responseStart", -1) >= 0 else None
    if (end := ended(req.url, s.t_invoke)) is not None:
        s.t_complete, s.ms = end, round(((first or end) - s.t_invoke) * 1000, 1)
    elif first is not None and req.failure:
        s.cut, s.t_complete, s.ms = True, first, round((first - s.t_invoke) * 1000, 1)  # left mid-reply
    else:
        s.outcome, s.reason = (
            "info",
            f"HTTP {s.status}, and its reply's stream ended without its end event ({spec.stream.end!r})",
        )


def numbered(sends: list[Send]) -> bool:
    """Each send's turn, in the order sent: one a message -- the id the test sent ([chat]
    id_field; a message sent again, a retry or a double submit, is one turn) where every send
    carried one (True), else one a send, its id "t<n>"."""
    ids_sent = bool(sends) and all(s.id for s in sends)
    turns: dict[str, int] = {}
    for i, s in enumerate(sends, 1):
        s.id = s.id if ids_sent else f"t{i}"
        s.turn = turns.setdefault(s.id, len(turns) + 1)
    return ids_sent


IDLE_DEADLINE_S = 5.0  # how long a page ended on its reload may take to load what it loads after it


def await_read(
    pages: list[Page],
    reads: list[tuple[float, Response]],
    asked: list[tuple[float, Request]],
    refresh: float,
    timeout_s: float,
) -> None:
    """The page's first history read after the refresh, where the test ended before it came
    (a test whose last step is ``page.reload()``: its page reads the history after load, and a
    sync test's events arrive only inside its Playwright calls): ``reads`` gets it. Waited for
    while the page is still loading what it loads after the load event (network idle, within
    IDLE_DEADLINE_S), then while such a read (in ``asked``) is in flight, within ``timeout_s``.
    A page that makes none stays without one: the refresh point was not reached."""
    if not pages or read_after(reads, refresh):
        return
    try:
        pages[-1].wait_for_load_state("networkidle", timeout=IDLE_DEADLINE_S * 1000)
    except PlaywrightError:
        pass  # a page that never goes idle (a long poll): what it read by now
    end = time.monotonic() + timeout_s
    while not read_after(reads, refresh) and _reading(reads, asked, refresh) and time.monotonic() < end:
        pages[-1].wait_for_timeout(POLL_S * 1000)  # lets the page's events in


def read_after(reads: list[tuple[float, Response]], refresh: float) -> bool:
    return any(at >= refresh for at, _ in reads)


def _reading(reads: list[tuple[float, Response]], asked: list[tuple[float, Request]], refresh: float) -> bool:
    """A history GET the page made after the refresh, neither answered nor failed yet."""
    answered = {id(r.request) for _, r in reads}
    return any(at >= refresh and id(q) not in answered and q.failure is None for at, q in asked)


def session_of(spec: Spec, ctx: BrowserContext, posts: list[Request], sock_frames: list[Frame]) -> str | None:
    """The conversation's id as the test's page had it: its cookie, a fixed one, as lab
    investigate reads the app's own page (identity.Identity.session_id), then where the test's
    own requests carried it (``posts``: the chat POSTs, newest first; ``sock_frames``: its socket's)."""
    s = spec.session
    if s.is_cookie:
        c = who.session_cookie(spec, [dict(x) for x in ctx.cookies()])
        return None if c is None else str(c["value"])
    if fixed := who.fixed_id(spec):
        return fixed
    if s.page_url:
        for page in ctx.pages:
            if sid := who.page_session(spec, page.url):
                return sid
    kept = who.local_storage(ctx.storage_state(), who.origin(spec)).get(s.page_storage or "")
    return kept or who.sent_id(spec, posts) or frames.sent_id(spec, sock_frames)
