"""The frames of a user's own test over the app's socket ([transport]: WebSocket or Socket.IO),
for the recorder (lab.investigate.plugin.recorder): each message the page sent, and its answer
from the frames that followed -- read by lab investigate's own reading of an answer's frames
(lab.investigate.browser.app_frames.FrameReading) and judged by its own rule (rows.answer).

Timed by the browser, not by Playwright's frame events: a sync test gets those only inside its
next Playwright call, so a message frame and its ack could reach the lab together after a pause
of the test's own -- an answer timed 0 ms, "acknowledged too fast" by the lab's delay. The page's
WebSocket is wrapped before its scripts run and each frame handed over with its Date.now()."""

from __future__ import annotations

import json
from typing import Any

from playwright.sync_api import BrowserContext

from lab.investigate.browser.app_frames import Frame, FrameReading, frame_kind
from lab.investigate.browser.identity import field_id
from lab.investigate.evidence.answers import Answer, path_pattern
from lab.investigate.evidence.rows import answer
from lab.investigate.spec.parse import Spec
from lab.investigate.spec.shapes import follow_pattern
from lab.model.history import Send

BINDING = "__chaoslabFrame"
# Each frame handed over with the page's clock. A socket is named by its Engine.IO session id
# where its URL carries one: Socket.IO's long-polling requests (XHR; POST bodies the page's
# packets, GET answers the app's, "\x1e"-separated -- EIO 3: "<length>:<packet>" each) and the
# WebSocket they upgrade to are one socket, and a message sent before the upgrade (or on a
# client kept to polling) is read as one sent over the WebSocket.
_JS = r"""
(() => {
  if (!window.%(b)s || window.__labRecording) return;
  window.__labRecording = true;
  const tell = (d, data, sock) => {
    try { window.%(b)s(d, typeof data === "string" ? data : null, Date.now(), sock); } catch (e) {}
  };
  const sidOf = (url) => {  // an Engine.IO URL's session (not a ?sid= of another protocol's)
    const m = /[?&]EIO=\d/.test(String(url)) && /[?&]sid=([^&#]+)/.exec(String(url));
    return m ? "eio:" + m[1] : null;
  };
  const packets = (url, text) => {
    if (typeof text !== "string" || !text) return [];
    if (!/[?&]EIO=[23](&|$)/.test(url)) return text.split("\x1e");
    const out = [];
    for (let i = 0; i < text.length; ) {
      const c = text.indexOf(":", i), n = parseInt(text.slice(i, c), 10);
      if (c < 0 || !(n >= 0)) break;
      out.push(text.slice(c + 1, c + 1 + n));
      i = c + 1 + n;
    }
    return out;
  };
  const Native = window.WebSocket;
  if (Native) {
    class Recorded extends Native {
      constructor(...args) {
        super(...args);
        const sock = sidOf(args[0]) || Math.random().toString(36).slice(2);
        this.addEventListener("message", (ev) => tell("received", ev.data, sock));
        this.addEventListener("close", () => tell("close", null, sock));
        const send = this.send.bind(this);
        this.send = (data) => { tell("sent", data, sock); return send(data); };
      }
    }
    window.WebSocket = Recorded;
  }
  const XHR = window.XMLHttpRequest;
  if (XHR) {
    class Polled extends XHR {
      open(method, url, ...rest) {
        this.__labUrl = /[?&]transport=polling(&|$)/.test(String(url)) ? String(url) : null;
        return super.open(method, url, ...rest);
      }
      send(body) {
        const url = this.__labUrl, sock = url && sidOf(url);
        if (sock) {
          for (const p of packets(url, body)) tell("sent", p, sock);
          this.addEventListener("load", () => { for (const p of packets(url, this.responseText)) tell("received", p, sock); });
        }
        return super.send(body);
      }
    }
    window.XMLHttpRequest = Polled;
  }
})();
""" % {"b": BINDING}
# A streamed chat answer's end event ([stream] end), timed as it reaches the page: the page's
# fetch of the chat route is read beside it (a clone: the page's own response untouched) and the
# moment its body first holds the end is handed over, with the request's body to match the send.
# Where the reply streams on a request of its own ([stream] follow: FOLLOW), that GET is read so
# instead -- by fetch, or as an EventSource's event of the end's name (ES_END: "event: end" is
# the event "end"; "data: [DONE]" a message of that data; else a message holding the end) -- and
# handed over with the GET's URL.
_END_JS = r"""
(() => {
  const orig = window.fetch, tell = window.%(b)s, END = %(end)s, CHAT = new RegExp(%(chat)s);
  const FOLLOW = %(follow)s === null ? null : new RegExp(%(follow)s), ES_END = %(es_end)s;
  if (typeof orig !== "function" || !tell || window.__labStreamEnds) return;
  window.__labStreamEnds = true;
  const pathOf = (url) => { try { return new URL(String(url), location.href).pathname; } catch (e) { return ""; } };
  window.fetch = function (input, init) {
    const answer = orig.apply(this, arguments);
    let body = null;
    try {
      const req = input instanceof Request ? input : null;
      const method = String((init && init.method) || (req ? req.method : "GET")).toUpperCase();
      const url = req ? req.url : String(input), path = pathOf(url);
      if (FOLLOW) { if (method === "GET" && FOLLOW.test(path)) body = new URL(url, location.href).href; }
      else if (method === "POST" && CHAT.test(path) && init && typeof init.body === "string") body = init.body;
    } catch (e) {}
    if (body === null) return answer;
    answer.then(async (resp) => {
      const reader = resp.clone().body.getReader(), text = new TextDecoder();
      let seen = "";
      for (;;) {
        const {done, value} = await reader.read();
        if (done) return;
        seen += text.decode(value, {stream: true});
        if (seen.includes(END)) { tell("ended", body, Date.now(), "fetch"); reader.cancel(); return; }
      }
    }).catch(() => {});
    return answer;
  };
  const ES = window.EventSource;
  if (FOLLOW && ES) {
    class Followed extends ES {
      constructor(url, ...rest) {
        super(url, ...rest);
        if (!FOLLOW.test(pathOf(url))) return;
        const href = new URL(String(url), location.href).href;
        this.addEventListener(ES_END.name, (ev) => {
          if (ES_END.within !== null ? String(ev.data).includes(ES_END.within) : ES_END.data === null || ev.data === ES_END.data)
            tell("ended", href, Date.now(), "es");
        });
      }
    }
    window.EventSource = Followed;
  }
})();
"""


def es_end(end: str) -> dict[str, str | None]:
    """[stream] end as an EventSource event: {name, data, within} (see _END_JS)."""
    line = end.strip()
    if line.startswith("event:"):
        return {"name": line[len("event:") :].strip(), "data": None, "within": None}
    if line.startswith("data:"):
        return {"name": "message", "data": line[len("data:") :].strip(), "within": None}
    return {"name": "message", "data": None, "within": line}


def record(ctx: BrowserContext, frames: list[Frame], spec: Spec) -> None:
    """From the context's next page load on, every frame of its pages' sockets into ``frames``
    (a [transport] spec), or the moment each streamed chat answer's end event came ([stream]
    end: an "ended" frame, its data the request's body)."""

    def frame(_source: Any, direction: str, data: str | None, at_ms: float, sock: Any) -> None:
        frames.append((at_ms / 1000, direction, data, sock))

    ctx.expose_binding(BINDING, frame)
    if spec.transport is not None:
        ctx.add_init_script(_JS)
    elif spec.stream is not None and spec.stream.end:
        pattern = path_pattern(spec.chat.path).pattern
        follow = follow_pattern(spec.stream.follow)
        ctx.add_init_script(
            _END_JS
            % {
                "b": BINDING,
                "end": json.dumps(spec.stream.end),
                "chat": json.dumps(pattern),
                "follow": json.dumps(follow.pattern if follow else None),
                "es_end": json.dumps(es_end(spec.stream.end)),
            }
        )


def watched(spec: Spec) -> bool:
    """Whether the page's own scripts hand the recorder anything (``record``)."""
    return spec.transport is not None or (spec.stream is not None and bool(spec.stream.end))


def stream_end(frames: list[Frame], body: str | None, after: float) -> float | None:
    """When the end event of the streamed answer to the chat POST of ``body`` reached the page
    (of the followed stream whose URL is ``body``, where [stream] follow names one)."""
    return next((at for at, d, data, _ in frames if d == "ended" and data == body and at >= after), None)


def sends(spec: Spec, frames: list[Frame]) -> list[Send]:
    """A send for each message frame the pages sent, answered by the frames after it on its socket."""
    out: list[Send] = []
    for i, (at, direction, payload, sock) in enumerate(frames):
        text = _text(spec, payload) if direction == "sent" else None
        if text is None:
            continue
        raw: Answer = {"status": None, "type": "frames", "body": "", "ms": 0.0, "error": None, "cut": None}
        # Begun at this frame, known to be the message: its text may be escaped in it (a quote).
        raw |= {"start": at, "end": None, "reply": None, "frames": 0}
        reading = FrameReading(spec, text, False, raw)
        last = at
        for f in (f for f in frames[i + 1 :] if f[3] == sock):
            last = f[0]
            if reading.feed(f):
                break
        else:
            raw["error"] = raw["error"] or "the test ended before the reply's end frame"
        raw["end"], raw["body"] = last, "".join(reading.chunks)
        mid = field_id(_message(spec, payload), spec.chat.id_field) if spec.chat.id_field else None
        out.append(answer(spec, raw, mid or "", text, 0, True, False, at))
    return out


def sent_id(spec: Spec, frames: list[Frame]) -> str | None:
    """The conversation's id as the newest message frame carried it ([session] field)."""
    name = spec.session.field
    if not name:
        return None
    for _at, direction, payload, _sock in reversed(frames):
        if direction == "sent" and (sid := field_id(_message(spec, payload), name)):
            return sid
    return None


def _text(spec: Spec, payload: Any) -> str | None:
    """The user's text, where ``payload`` is a message frame of the spec's transport."""
    body = _message(spec, payload)
    got = body.get(spec.chat.message_field) if body is not None else None
    return got if isinstance(got, str) and got else None


def _message(spec: Spec, payload: Any) -> dict[str, Any] | None:
    """The body of a message frame of the spec's transport (a Socket.IO event of its name)."""
    t = spec.transport
    if t is None or not isinstance(payload, str):
        return None
    try:
        if t.kind != "socketio":
            body = json.loads(payload)
        elif frame_kind(spec, payload) == t.event:
            body = (json.loads(payload[payload.index("[") :])[1:2] or [None])[0]
        else:
            return None
    except ValueError:
        return None
    return body if isinstance(body, dict) else None
