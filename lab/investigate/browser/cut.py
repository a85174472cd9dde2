"""Did a cut mid-reply land before the reply ended? Told from the browser's network, not from
the page's script: a page (the lab's or the app's own) may react to the first fragment late on a
busy machine, and by then the app may have finished its stream (and stored what it stores at
the end) -- the trial then did not test the window it claims to.

Two checks, on the times Playwright's network events reach the lab (one clock for all):
- **the end seen first**: the reply's end reached the browser before the cut closed its
  connection -- a streamed HTTP answer whose request *finished* (its whole body arrived) rather
  than *failed*; on frames (WebSocket, Socket.IO over a WebSocket), the end frame received on the
  message's socket before that socket's close;
- **too late to tell**: the cut came at least CUT_FRACTION of the way through the shortest
  reply the same conversation streamed to its end (first fragment to end), or such replies
  stream whole within MIN_REPLY_S. The app may have sent
  its end the browser had not read yet when the connection closed (seen here: an app streaming
  its reply at once, the end frame never reported before the close), so a cut is credited only
  while it is clearly inside the reply's usual time.

Neither check can see a reply that ended early by chance; the first turn, with no earlier reply
to measure, is judged by the first check only. The store can (``stored_before``): the cut turn's
reply already in the key, as it is in the end, when the cut's reload began.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Sequence
from typing import Any
from dataclasses import dataclass
from urllib.parse import unquote_plus, urlsplit
from weakref import WeakKeyDictionary

from playwright.async_api import Page, Request, Response

from lab.investigate.browser import app_frames
from lab.investigate.spec.parse import Spec
from lab.investigate.spec.shapes import follow_pattern
from lab.model.history import Trial
from lab.model.placement import place
from lab.model.store import CLOCK_GRAIN_S, first_writes

SETTLE_S = 5.0  # how long the network may take to report the cut connection's end
# A cut must land within this fraction of the shortest earlier reply's stream to count: reply
# lengths vary, and the lab's clock reads events a little after the browser saw them.
CUT_FRACTION = 0.5
# Replies that stream whole faster than this leave no window the lab can aim at from its clock
# (event times reach it with a few ms of jitter): every cut is then unknown.
MIN_REPLY_S = 0.02


@dataclass
class Span:
    """One reply as the browser's network saw it (epoch s, as the events reached the lab):
    its start (first fragment; a streamed answer's headers where no body came), its end, the
    connection's close."""

    start: float | None = None
    end: float | None = None
    closed: float | None = None

    @property
    def length_s(self) -> float | None:
        return self.end - self.start if self.start is not None and self.end is not None else None


def judge(cut: Span, earlier: Sequence[Span], what_end: str) -> str | None:
    """Why ``cut`` did not test the mid-stream window (None: it did, as far as can be told).
    Pure: the spans come from the page's network events."""
    if cut.end is not None and (cut.closed is None or cut.end <= cut.closed):
        return (
            f"the reply's {what_end} reached the browser before the cut closed its connection: "
            "the mid-stream window was not tested"
        )
    lengths = [s.length_s for s in earlier if s.length_s is not None]
    if cut.start is None or cut.closed is None or not lengths:
        return None
    took, usual = cut.closed - cut.start, min(lengths)
    if usual < MIN_REPLY_S:
        return (
            f"the earlier replies streamed whole in {usual * 1000:.0f} ms: too short a window to aim a cut "
            "at (the mid-stream window was not tested)"
        )
    if took >= CUT_FRACTION * usual:
        return (
            f"the cut closed the connection {took * 1000:.0f} ms into the reply, while the shortest "
            f"earlier reply took {usual * 1000:.0f} ms to end: it may have come after this reply's end "
            "(the mid-stream window was not tested; a busy machine reacts late)"
        )
    return None


def stored_before(before: list[bytes], final: list[bytes], t: Trial) -> str | None:
    """The store's side of the same question: the key held, as the cut's reload began, all it
    holds at the end, the cut turn's reply shown included -- the app had finished that reply and
    stored it before the cut (a busy machine reacts late; the browser may not have read the end
    yet, so the network's checks above cannot see it). Nothing the app wrote after the cut means
    nothing the cut could have stopped. A correct app that stores the reply after the client left
    writes it later, so it is judged."""
    last = t.sends[-1]
    if before != final or t.final_rows is None or not place(t.final_rows, t.sends)[0][last.id].reply:
        return None
    return (
        "the key already held the cut turn's reply, as stored in the end, when the cut's reload began: "
        "the app had finished the reply before the cut (the mid-stream window was not tested)"
    )


def not_cut(t: Trial, lab_page: bool) -> str | None:
    """Why a mid_stream trial with an acknowledged send tested no cut, if it did not: its last
    send (the one to cut) failed or came whole in its first chunk, or (the lab page's own cut)
    the store shows the turn written before the cut reached the app."""
    last = t.sends[-1]
    if last.outcome != "ok":
        return f"the last send, to be cut mid-stream, failed ({last.status}): nothing cut"
    if not last.cut:
        return f"the last reply came whole in its first chunk ({last.ms or 0:.0f} ms): nothing was cut mid-stream"
    return finished_before_cut(t) if lab_page else None


def finished_before_cut(t: Trial) -> str | None:
    """The store's record against the lab page's own cut (an HTTP answer read to its first chunk,
    then aborted): the cut turn was first written after that first chunk came and before the
    abort -- the app had streamed the reply to its end and stored the turn before the cut reached
    it (a busy machine's page reads late; seen under a CI runner's load with an instant stream).
    The cut tested nothing. So too a write within the clock's grain of the abort, wherever the first
    chunk was: the two cannot be ordered (an instant stream's abort may follow its first chunk by
    less than a millisecond, and a write 2 ms after both was seen to be the finished stream's,
    2026-12-04) -- unless the conversation's earlier turns took far longer from send to stream's
    end than this one took from send to abort (``_well_inside_usual_reply``). A turn written
    before the first chunk (an app that stores, then streams) or after the abort (one that goes on
    when the client leaves), by more than the grain, is judged. The turn's first write is the one
    carrying its question (a streamed reply's text is the app's format)."""
    last = t.sends[-1] if t.sends else None
    if t.store is None or last is None or not last.cut or last.ms is None or not last.t_complete:
        return None
    written = first_writes(t).get(last.turn)
    first_chunk = last.t_invoke + last.ms / 1000
    if written is None:
        return None
    if abs(written[0] - last.t_complete) < CLOCK_GRAIN_S and not _well_inside_usual_reply(t):
        return (
            f"the cut turn was stored {abs(written[0] - last.t_complete) * 1000:.0f} ms from the cut's abort, within "
            "the clock's grain: whether the app had finished the stream first cannot be told (the mid-stream "
            "window was not tested)"
        )
    if not first_chunk + CLOCK_GRAIN_S < written[0] < last.t_complete:
        return None
    return (
        f"the cut turn was stored {(last.t_complete - written[0]) * 1000:.0f} ms before the cut's abort, "
        "after the reply's first chunk: the app had finished the stream (the mid-stream window was not tested)"
    )


def _well_inside_usual_reply(t: Trial) -> bool:
    """The abort, and a write within the grain of it, came well inside the time the same
    conversation's earlier turns took from their send to their stream's end (judge's
    CUT_FRACTION, the grain added): the cut turn's stream cannot have ended first, so the write is
    not its end's -- the app stored the question, then streamed (a Fastify app writing right
    before its first frame, the abort 4 ms after: 15 of 15 trials unknown before, 2026-12-05; its
    turns took 190-210 ms, the abort came 13 ms after the send). An instant stream, or a first
    turn (none to measure), stays unknown."""
    last = t.sends[-1]
    totals = [
        s.t_complete - s.t_invoke
        for s in t.sends[:-1]
        if s.outcome == "ok" and s.streamed and not s.cut and s.t_complete
    ]
    if not totals or last.t_complete is None:
        return False
    return (last.t_complete - last.t_invoke) + CLOCK_GRAIN_S < CUT_FRACTION * min(totals)


class Posts:
    """A page's POST requests: when each one's answer began and how it ended. Where the reply
    streams on a request of its own (``follow``: [stream] follow's path as a pattern), that GET
    is the answer of the POST before it, and the POST's own answer (202 {"turn": ...}) none."""

    def __init__(self, follow: re.Pattern[str] | None = None) -> None:
        self.follow = follow
        self.requests: list[tuple[Request, str]] = []  # (an answer's request, the POST body it answers)
        self._posted = {"page": "", "cdp": ""}  # the last POST's body, as each side saw it
        self.answered: dict[int, float] = {}
        self.ended: dict[int, tuple[float, bool]] = {}  # (when, finished: True / failed: False)
        # The network's first bytes of each answer's body, by the protocol's request id: an app
        # that sends its headers at once and its first token after the model's first token (a
        # "thinking" pause of 400 ms, seen to make every cut "too late" when the span began at
        # the headers) is measured from its first fragment, like a socket's reply.
        self.bodies: list[tuple[str, str]] = []  # (request id, POST body), in the order sent
        self.first_data: dict[str, float] = {}
        self._changed = asyncio.Event()

    def _answer(self, resp: Response) -> None:
        self.answered.setdefault(id(resp.request), time.time())

    def _end(self, req: Request, finished: bool) -> None:
        self.ended[id(req)] = (time.time(), finished)
        self._changed.set()

    def _answers(self, side: str, method: str, url: str, body: str | None) -> str | None:
        """The POST body the request ``method url`` answers (None: no send's answer)."""
        if method == "POST":
            self._posted[side] = body or ""
            return None if self.follow else self._posted[side]
        followed = self.follow is not None and method == "GET" and self.follow.match(urlsplit(url).path)
        return self._posted[side] if followed else None

    def _request(self, r: Request) -> None:
        if (body := self._answers("page", r.method, r.url, r.post_data)) is not None:
            self.requests.append((r, body))

    def _sent(self, params: dict[str, Any]) -> None:
        request = params.get("request") or {}
        if (
            body := self._answers("cdp", request.get("method", ""), request.get("url", ""), request.get("postData"))
        ) is not None:
            self.bodies.append((params["requestId"], body))

    def _data(self, params: dict[str, Any]) -> None:
        self.first_data.setdefault(params["requestId"], time.time())

    async def attach(self, page: Page) -> None:
        page.on("request", self._request)
        page.on("response", self._answer)
        page.on("requestfinished", lambda r: self._end(r, True))
        page.on("requestfailed", lambda r: self._end(r, False))
        cdp = await page.context.new_cdp_session(page)  # the lab drives Chromium only
        cdp.on("Network.requestWillBeSent", self._sent)
        cdp.on("Network.dataReceived", self._data)
        await cdp.send("Network.enable")

    def carrying(self, text: str) -> Request | None:
        """The last answer to a POST whose body holds ``text`` (JSON or a form's encoding)."""
        return next((r for r, body in reversed(self.requests) if carries(body, text)), None)

    def first_fragment(self, text: str) -> float | None:
        """When the first bytes of the body answering the last POST that carried ``text`` came."""
        rid = next((rid for rid, body in reversed(self.bodies) if carries(body, text)), None)
        return self.first_data.get(rid) if rid is not None else None

    async def span(self, text: str, deadline: float) -> Span | None:
        req = self.carrying(text)
        if req is None:
            return None
        while id(req) not in self.ended:
            self._changed.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                await asyncio.wait_for(self._changed.wait(), timeout=left)
            except TimeoutError:
                break
        at, finished = self.ended.get(id(req), (None, False))
        start = self.first_fragment(text) or self.answered.get(id(req))  # no body yet: the headers
        return Span(start, at if finished else None, None if finished else at)


def carries(body: str, text: str) -> bool:
    """Whether a POST's body holds ``text`` (JSON, or a form's encoding)."""
    return text in body or text in unquote_plus(body)


_POSTS: WeakKeyDictionary[Page, Posts] = WeakKeyDictionary()


async def watch(page: Page, spec: Spec) -> None:
    """Record what ``page``'s network sees of its sends, if the spec's replies can be cut."""
    if spec.transport is not None:
        app_frames.watch(page)
    elif spec.stream is not None and page not in _POSTS:
        _POSTS[page] = posts = Posts(follow_pattern(spec.stream.follow))
        await posts.attach(page)


def answer_begun(page: Page, spec: Spec) -> Callable[[], bool]:
    """From now on, whether the next send's answer has begun (write_refused at=answer's moment):
    the first bytes of its POST's body reached the browser (a streamed HTTP answer), or, on
    frames, the reply's first frame -- a fragment or its end (a Socket.IO ping is none). Not the
    headers, nor an ack frame: an app may send them before it stores the question (the openai
    example's StreamingResponse: its question's SET was refused in 1 of 3 trials).
    ``page`` is watched (``watch``) from its creation."""
    if spec.transport is not None:
        log, t = app_frames.log_of(page), spec.transport
        assert log is not None
        i0, kinds = len(log.frames), {t.chunk, t.end}
        return lambda: any(
            d == "received" and app_frames.frame_kind(spec, p) in kinds for _, d, p, _ in log.frames[i0:]
        )
    posts = _POSTS.get(page)
    assert posts is not None, "a page of a streaming app is watched from its creation"
    n0 = len(posts.bodies)
    return lambda: any(rid in posts.first_data for rid, _ in posts.bodies[n0:])


async def missed(page: Page, spec: Spec, text: str, earlier: Sequence[str], settle_s: float = SETTLE_S) -> str | None:
    """Why the cut of the reply to ``text`` did not test the mid-stream window (None: it landed
    inside it, or the network cannot tell -- then the page's own claim stands). ``earlier``:
    the texts of the conversation's replies streamed to their end before it."""
    deadline = time.monotonic() + settle_s
    if spec.transport is not None:
        log = app_frames.log_of(page)
        if log is None:
            return None
        cut = await _frame_span(log, spec, text, deadline)
        spans = [await _frame_span(log, spec, e, deadline) for e in earlier]
        what = f"{spec.transport.end} frame"
    else:
        posts = _POSTS.get(page)
        if posts is None:
            return None
        cut = await posts.span(text, deadline)
        spans = [await posts.span(e, deadline) for e in earlier]
        what = "whole streamed answer"
    if cut is None:
        return None  # not seen on a watched connection (Socket.IO still long-polling): cannot tell
    return judge(cut, [s for s in spans if s is not None], what)


async def _frame_span(log: app_frames.FrameLog, spec: Spec, text: str, deadline: float) -> Span | None:
    """The reply to ``text`` on the socket that carried it: first fragment, end frame, close."""
    t = spec.transport
    assert t is not None
    # The message went out before the cut: its frame is logged already (no wait for it).
    sent = [(k, f[3]) for k, f in enumerate(log.frames) if f[1] == "sent" and isinstance(f[2], str) and text in f[2]]
    if not sent:
        return None
    i, sock = sent[-1][0] + 1, sent[-1][1]
    span = Span()
    while span.end is None and span.closed is None:
        frame = await log.at(i, deadline)
        if frame is None:
            break  # neither seen in time
        i += 1
        at, direction, payload, n = frame
        if n != sock:
            continue
        if direction == "close":
            span.closed = at
        elif direction == "received":
            kind = app_frames.frame_kind(spec, payload)
            if kind == t.chunk and span.start is None:
                span.start = at
            elif kind == t.end:
                span.end = at
    return span
