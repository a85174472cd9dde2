"""The app's own page over its own WebSocket ([page] with a [transport]): the lab types and
clicks as a user does, and reads each answer from the frames the page's socket sends and
receives (Playwright's WebSocket frame events): the message frame that carries the text, the
app's ack, the reply's fragments, its end or the app's error frame. A cut mid-reply closes the
page's socket at the first fragment, from inside the page (``cut_hook``), as a refresh does; the
caller then reloads.

The functions return the same raw dicts as the lab's page (lab/investigate/browser/page.py), so the
prober judges either the same way."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any
from weakref import WeakKeyDictionary

from playwright.async_api import Page, TimeoutError as PlaywrightTimeout, WebSocket

from lab.investigate.evidence.answers import Answer, HistoryRead
from lab.investigate.browser import app_page
from lab.investigate.evidence.rows import json_path
from lab.investigate.spec.parse import Spec

Frame = tuple[float, str, Any, int]  # (epoch s, "sent" | "received" | "close", payload, socket number)


class FrameLog:
    """Every frame of a page's WebSockets, in order, as they happen (one log per page)."""

    def __init__(self) -> None:
        self.frames: list[Frame] = []
        self._changed = asyncio.Event()
        self._sockets = 0

    def _add(self, direction: str, payload: Any, sock: int) -> None:
        self.frames.append((time.time(), direction, payload, sock))
        self._changed.set()

    def attach(self, page: Page) -> None:
        def socket(ws: WebSocket) -> None:
            # Each socket numbered: a reload opens another, and a cut is judged on the one that
            # carried the message (lab.investigate.browser.cut).
            self._sockets += 1
            n = self._sockets
            ws.on("framesent", lambda payload: self._add("sent", payload, n))
            ws.on("framereceived", lambda payload: self._add("received", payload, n))
            ws.on("close", lambda _ws: self._add("close", None, n))

        page.on("websocket", socket)

    async def at(self, i: int, deadline: float) -> Frame | None:
        """Frame ``i``, once there (None at the deadline, time.monotonic())."""
        while len(self.frames) <= i:
            self._changed.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                await asyncio.wait_for(self._changed.wait(), timeout=left)
            except TimeoutError:
                return None
        return self.frames[i]


_LOGS: WeakKeyDictionary[Page, FrameLog] = WeakKeyDictionary()


def watch(page: Page) -> None:
    """Log ``page``'s frames from now on (before it opens its socket; once per page)."""
    if page not in _LOGS:
        _LOGS[page] = log = FrameLog()
        log.attach(page)


def log_of(page: Page) -> FrameLog | None:
    """``page``'s frame log, if it is watched."""
    return _LOGS.get(page)


# The cut, made in the page the moment the reply's first fragment arrives: the page's sockets
# are the app's own (its script opens them), so the lab wraps the WebSocket constructor before
# any script of the page runs. Armed for one send (window.__labCutArmed); a received frame of the
# chunk kind (as _kind reads it) then closes that socket at once -- as a refresh closes it, but
# without waiting for the lab to see the frame and ask the browser to reload: on a busy machine
# that round trip outlasted a whole reply (a loaded run: 16 of 18 cuts came after the reply's
# end frame). The lab reloads afterwards, as before.
_CUT_JS = """
(() => {
  const cfg = %s;
  const Native = window.WebSocket;
  if (!Native || Native.__lab) return;
  const kind = (data) => {
    if (typeof data !== "string") return null;
    try {
      if (cfg.socketio) {
        if (!data.startsWith("42")) return null;
        let body = data.slice(2);
        if (body.startsWith("/")) body = body.slice(body.indexOf(",") + 1);
        body = body.replace(/^[0-9]+/, "");
        const arr = JSON.parse(body);
        return Array.isArray(arr) && arr.length ? arr[0] : null;
      }
      const d = JSON.parse(data);
      return d && typeof d === "object" ? d[cfg.typeField] : null;
    } catch (e) { return null; }
  };
  class LabSocket extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (ev) => {
        if (window.__labCutArmed && kind(ev.data) === cfg.chunk) {
          window.__labCutArmed = false;
          this.close();
        }
      });
    }
  }
  LabSocket.__lab = true;
  window.WebSocket = LabSocket;
})();
"""


def cut_hook(spec: Spec) -> str:
    """The init script of a page with a [transport]: inert until a send arms it (``send``)."""
    t = spec.transport
    assert t is not None
    return _CUT_JS % json.dumps({"socketio": t.kind == "socketio", "typeField": t.type_field, "chunk": t.chunk})


def frame_kind(spec: Spec, payload: Any) -> Any:
    """A frame's kind as the spec's transport names it (None: not one of the app's frames)."""
    return _kind(spec, payload)[0]


def _kind(spec: Spec, payload: Any) -> tuple[Any, Any]:
    """A frame's kind and its data: the JSON frame's ``type_field``, or for Socket.IO the event
    name of an Engine.IO message packet (``42["chunk", {...}]``, optionally ``42/ns,[...]``)."""
    assert spec.transport is not None
    if spec.transport.kind == "socketio":
        if not isinstance(payload, str) or not payload.startswith("42"):
            return None, payload
        body = payload[2:]
        if body.startswith("/"):  # a namespace: "/ns," before the array
            body = body.partition(",")[2]
        body = body.lstrip("0123456789")  # an ack id, if the event asks for one
        try:
            arr = json.loads(body)
        except ValueError:
            return None, payload
        if not isinstance(arr, list) or not arr:
            return None, payload
        return arr[0], (arr[1] if len(arr) > 1 else None)
    try:
        d = json.loads(payload)
    except (TypeError, ValueError):
        return None, payload
    return (d.get(spec.transport.type_field) if isinstance(d, dict) else None), d


def _pick(d: Any, path: str | None) -> Any:
    try:
        return json_path(d, path) if path else None
    except KeyError:
        return None


async def send(page: Page, spec: Spec, text: str, cut: bool, in_page: bool = False, idle: bool = True) -> Answer:
    """Type ``text`` and send it; its answer from the frames. With ``cut``, back at the first
    reply fragment (the caller reloads: the socket closes mid-reply). ``idle``: then wait for
    ``page.idle`` (not before a reload that should follow the answer at once)."""
    assert spec.page is not None and spec.transport is not None
    watch(page)
    log, t0 = _LOGS[page], time.monotonic()
    i = len(log.frames)
    # Frame events carry no time of their own: they reach the lab a little after the browser
    # sent or got the frame. The send is timed from before the typing and the answer from the
    # event, so ``ms`` can only come out longer than it was: never "acknowledged too fast" by
    # the lab's own delay (measured: an ack 297 ms after the message frame's event, under 300 ms
    # of Redis latency, on an app that waits for its write).
    invoked = time.time()
    if cut:
        await page.evaluate("() => { window.__labCutArmed = true; }")  # cut_hook closes at the first fragment
    try:
        await app_page.type_and_send(page, spec.page, text, in_page)
    except PlaywrightTimeout as exc:
        return app_page.no_answer(t0, spec, exc)
    out: Answer = {"status": None, "type": "frames", "body": "", "ms": 0.0, "error": None, "cut": None}
    out |= {"start": None, "end": None, "reply": None, "frames": 0}
    await _follow(log, i, spec, text, cut, out, t0 + spec.chat.timeout_s)
    if out["start"] is not None:
        out["ms"] += (out["start"] - invoked) * 1000 if out["status"] is not None else 0.0
        out["start"] = invoked
    if idle and spec.page.idle and out["reply"] is not None:
        try:
            await page.wait_for_selector(spec.page.idle, state="attached", timeout=spec.chat.timeout_s * 1000)
        except PlaywrightTimeout:
            out["error"] = f"page: page.idle = {spec.page.idle!r} never appeared after the reply's end frame"
    return out


async def _follow(log: FrameLog, i: int, spec: Spec, text: str, cut: bool, out: Answer, deadline: float) -> None:
    """Read the frames from ``i`` on, as they come: the message frame holding ``text``, then its answer."""
    t = spec.transport
    assert t is not None
    reading = FrameReading(spec, text, cut, out)
    while True:
        frame = await log.at(i, deadline)
        if frame is None:
            out["error"] = out["error"] or (
                f"no {t.end} frame within {spec.chat.timeout_s:g} s"
                if out["start"]
                else f"{app_page.NOT_SENT} frame holding the message within {spec.chat.timeout_s:g} s"
            )
            break
        i += 1
        if reading.feed(frame):
            break
    out["end"] = out["end"] or time.time()
    out["body"] = "".join(reading.chunks)


class FrameReading:
    """One message's answer, read a frame at a time into ``out``: the sent frame holding
    ``text`` starts it; the app's ack, or its first reply fragment, acknowledges it; its end,
    its error frame or the socket's close ends it (with ``cut``: its first fragment). The lab's
    own sends feed it each frame as it comes (``_follow``); a user's test's are read from the
    frames it left (lab.investigate.plugin.frames)."""

    def __init__(self, spec: Spec, text: str, cut: bool, out: Answer) -> None:
        assert spec.transport is not None
        self.t, self.spec, self.text, self.cut, self.out = spec.transport, spec, text, cut, out
        self.chunks: list[str] = []

    def _acked(self, at: float) -> None:  # (only once the message frame, and its start, was seen)
        if self.out["status"] is None:
            self.out["status"], self.out["ms"] = 200, (at - (self.out.get("start") or at)) * 1000

    def feed(self, frame: Frame) -> bool:
        """One frame; True once the answer is over."""
        t, out = self.t, self.out
        at, direction, payload, _sock = frame
        if out["start"] is None:
            if direction == "sent" and isinstance(payload, str) and self.text in payload:
                out["start"] = at
            return False
        if direction == "close":
            out["error"] = "the page's socket closed before the reply ended"
            return True
        if direction != "received":
            return False
        kind, d = _kind(self.spec, payload)
        out["frames"] += 1
        if t.ack and kind == t.ack:
            self._acked(at)
        elif t.error and kind == t.error:
            out["status"], out["error"] = 503, "error frame: " + str(payload)[:160]
            return True
        elif kind == t.chunk:
            self._acked(at)
            piece = _pick(d, t.chunk_text)
            self.chunks.append("" if piece is None else str(piece))
            if self.cut:
                out["cut"] = True
                return True
        elif kind == t.end:
            self._acked(at)
            whole = _pick(d, t.end_text)
            out["reply"] = "".join(self.chunks) if whole is None else str(whole)
            out["cut"] = False if self.cut else None
            return True
        return False


async def send_then_reload(page: Page, spec: Spec, text: str, delay_ms: int = 0) -> tuple[Answer, HistoryRead]:
    """The user who refreshes as the reply ends (or ``delay_ms`` after: lab window): the lab
    reloads the page at the end frame (a frame event, then the reload: the delay between the
    two is measured as refresh_delay_ms)."""
    out = await send(page, spec, text, False, idle=False)
    if delay_ms:
        await asyncio.sleep(delay_ms / 1000)  # the user reading the answer first: the swept variable
    reload: Callable[[], Any] = page.reload
    return out, await app_page.load(page, spec, reload)
