"""The lab's own chat page, served by the browser itself (``page.route``) on a reserved path of
the target's origin: its fetches are same-origin, so the target's cookies and a reload behave as
with the app's own page, and the target needs no page at all.

The page speaks the spec's contract with fetch and reports raw answers (status, content type,
body); Python parses them (lab/investigate/spec/parse.py), so a body outside the spec is evidence, not
a crash in the page.
"""

from __future__ import annotations

import dataclasses
import json
from typing import TypedDict

from lab.investigate.evidence.answers import Answer
from lab.investigate.evidence.rows import parse_rows
from lab.investigate.browser.page_frames import FRAMES_JS, SESSION_JS, SESSION_KEY
from lab.investigate.spec.parse import Spec
from lab.investigate.spec.shapes import page_url_pattern

PAGE_PATH = "/__chaoslab__/chat"

# Where a page that reloads itself the moment an answer arrives keeps that answer for the lab
# (sessionStorage: it survives the reload in the same tab). TAKE_ANSWER_JS reads and clears it.
ANSWER_KEY = "__chaoslab_answer"
TAKE_ANSWER_JS = f"""() => {{
  const v = sessionStorage.getItem({ANSWER_KEY!r});
  sessionStorage.removeItem({ANSWER_KEY!r});
  return v === null ? null : JSON.parse(v);
}}"""
# What a send whose stored answer did not survive the reload is taken as: maybe applied.
LOST_ANSWER: Answer = {
    "status": None,
    "type": "",
    "body": "",
    "ms": 0.0,
    "error": "the answer kept across the reload was gone after it",
    "cut": None,
}

POLL_MS = 100  # [chat] reply_from = "history": how often the lab's page reads for the reply


class Shown(TypedDict):
    replies: int  # the assistant rows the read shows (-1: a body outside the spec's form)
    asked: bool  # the message is among its user rows
    answered: bool  # this read answers the send (shown_rows)


def shown(spec: Spec, body: str, text: str, before: int = -1) -> Shown:
    """What one history read shows of the reply to ``text`` (labShown, exposed to the lab's page
    where [chat] reply_from = "history"; ``before``: the replies the read before the send
    showed). A body outside the spec's form shows nothing (replies -1)."""
    try:
        rows = parse_rows(spec.history, body)
    except ValueError:
        return {"replies": -1, "asked": False, "answered": False}
    return shown_rows([(r.role, r.text) for r in rows], text, before)


def shown_rows(rows: list[tuple[str, str]], text: str, before: int = -1) -> Shown:
    """``shown`` of rows as (role -- "user" or "assistant" --, text): a read's, or what the app's
    own page renders ([page]). The one rule of a polled reply, for the lab's page, the app's own
    page and a user's test: the read answers the send once the replies after the message are as
    many as the questions from it on -- a second tab's question and reply after it are not its
    reply (each question gets one) -- or, the message itself missing, once it shows a reply more
    than ``before`` (the user saw an answer to a question the store lost; -1: not known)."""
    asked = max((i for i, (role, t) in enumerate(rows) if role == "user" and text in t), default=None)
    replies = sum(r == "assistant" for r, _ in rows)
    since = rows[asked:] if asked is not None else []
    answered = bool(since) and sum(r == "assistant" for r, _ in since) >= sum(r == "user" for r, _ in since)
    more = asked is None and 0 <= before < replies
    return {"replies": replies, "asked": asked is not None, "answered": answered or more}


_HTML = """<!doctype html><html><head><meta charset="utf-8"><title>chaoslab probe</title></head>
__CLIENT__<body><h1>chaoslab probe of __NAME__</h1><ol id="history"></ol>
<script>
const CFG = __CFG__;
// mode: "read" reads the whole answer; "cut" reads the first chunk of a streamed answer, then
// aborts the request -- the connection closes mid-reply, as with a refresh or a closed tab.
// start / end: when the request left and its answer ended, in epoch seconds (the browser's
// clock): whether two sends were in flight together, and how soon after an answer a reload's
// read left, are judged from these. Taken from the network's own record (Resource Timing)
// where it has one: on a busy machine this script may run long after the last byte came, and
// a clock read here would move the answer later than the server sent it.
// The wall clock can be stepped while a page is open (a VM resumed, NTP): Redis's MONITOR and the
// lab date by it, the page's performance clock kept counting from its load. skew(): how far the
// wall clock moved from it since then (ms), added to every time the page reports.
const skew = () => Date.now() - (performance.timeOrigin + performance.now());
const now = () => Date.now() / 1000;
__SESSION_JS__
function netTimes(path, t0, start, end) {
  const url = new URL(path, location.href).href;
  const e = performance.getEntriesByName(url).filter(x => x.startTime >= t0 - 1).pop();
  if (!e || !(e.responseEnd > 0)) return {start, end};
  const sent = e.requestStart > 0 ? e.requestStart : e.startTime;
  const base = performance.timeOrigin + skew();
  return {start: (base + sent) / 1000, end: (base + e.responseEnd) / 1000};
}
async function call(method, path, body, mode, form, extra) {
  const t0 = performance.now(), start = now();
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), CFG.timeout_ms);
  path = target(path);
  try {
    const init = {method, credentials: "same-origin", headers: Object.assign(sessionHeaders(), extra || {}), signal: ctl.signal};
    if (method !== "GET" && CFG.csrf_cookie) {  // [http] csrf_cookie: echoed as the app's page does
      const c = document.cookie.split("; ").find(x => x.startsWith(CFG.csrf_cookie + "="));
      if (c) init.headers[CFG.csrf_header] = decodeURIComponent(c.slice(CFG.csrf_cookie.length + 1));
    }
    if (body !== undefined && form) {  // [chat] body = "form": as an HTML form posts it
      init.headers["Content-Type"] = "application/x-www-form-urlencoded";
      init.body = new URLSearchParams(Object.entries(body).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)])).toString();
    } else if (body !== undefined) { init.headers["Content-Type"] = "application/json"; init.body = JSON.stringify(body); }
    const resp = await fetch(path, init);
    const out = {status: resp.status, type: resp.headers.get("content-type") || "", body: "",
                 ms: 0, error: null, cut: null, redirected: resp.redirected, url: resp.url};
    if (mode === "cut" && resp.ok && resp.body) {
      const reader = resp.body.getReader();
      const first = await reader.read();
      out.ms = performance.now() - t0;
      out.body = first.done ? "" : new TextDecoder().decode(first.value);
      // Was that the whole answer? A read that is already settled tells; a pending one means
      // the stream is still going, and the abort below cuts it.
      const next = await Promise.race([reader.read(), new Promise(r => setTimeout(() => r(null), 0))]);
      out.cut = !first.done && !(next && next.done);
      ctl.abort();
    } else if (CFG.stream_end && resp.body) {
      // marked: when the app's own end event came -- the reply complete, as its page takes it;
      // an app that stores the reply after that event and only then closes has answered first.
      const reader = resp.body.getReader(), dec = new TextDecoder();
      for (let c = await reader.read(); !c.done; c = await reader.read()) {
        out.body += dec.decode(c.value, {stream: true});
        if (out.marked === undefined && out.body.includes(CFG.stream_end)) out.marked = now();
      }
      out.body += dec.decode();
      out.ms = performance.now() - t0;
    } else {
      out.body = await resp.text();
      out.ms = performance.now() - t0;
    }
    return Object.assign(out, mode === "cut" ? {start, end: now()} : netTimes(path, t0, start, now()));
  } catch (e) {
    return {status: null, type: "", body: "", ms: performance.now() - t0, error: String(e), cut: null,
            start, end: now()};
  } finally {
    clearTimeout(timer);
  }
}
// [chat] hidden_from: what the page the user typed in had, read fresh before each send: its form
// holding the message field's hidden fields (a CSRF token, a conversation's id), and the CSRF
// token in [http] csrf_meta's <meta> tag, sent in csrf_header as the app's script sends it.
async function pageTokens() {
  const out = {fields: {}, headers: {}};
  try {
    const r = await fetch(target(CFG.hidden_from || "/"), {credentials: "same-origin", headers: sessionHeaders()});
    const doc = new DOMParser().parseFromString(await r.text(), "text/html");
    const form = [...doc.forms].find((f) => f.elements.namedItem(CFG.message_field)) || doc.forms[0];
    if (CFG.hidden_from) for (const el of form ? form.querySelectorAll("input[type=hidden][name]") : []) out.fields[el.name] = el.value;
    const meta = CFG.csrf_meta && [...doc.querySelectorAll("meta[name]")].find((m) => m.name === CFG.csrf_meta);
    if (meta) out.headers[CFG.csrf_header] = meta.content;
  } catch (e) {}
  return out;
}
window.labSend = async (text, id, streamed, mode) => {
  const failed = await ensureSession();
  if (failed) return failed;
  if (CFG.transport) return frameSend(text, mode || "read");
  const body = streamed ? Object.assign({}, CFG.stream_request) : {};
  body[CFG.message_field] = text;
  if (CFG.id_field && id) body[CFG.id_field] = id;
  if (CFG.session.field) body[CFG.session.field] = sid();
  let headers = CFG.chat_headers;
  if (CFG.hidden_from || CFG.csrf_meta) {
    const got = await pageTokens();
    for (const [k, v] of Object.entries(got.fields)) if (!(k in body)) body[k] = v;
    headers = Object.assign({}, headers, got.headers);
  }
  const follows = !!CFG.stream_follow;  // every reply streams there
  const before = CFG.reply_from === "history" ? await shown(text, -1) : null;
  const out = await call("POST", CFG.chat_path, body, follows ? "read" : mode || "read", CFG.chat_body === "form", headers);
  if (!(out.status >= 200 && out.status < 300)) return out;
  keepFrom(out.body);
  return follows ? follow(out, mode || "read") : before ? polled(out, text, before) : out;
};
// [chat] reply_from = "history": the answer only took the message; the reply is the history's,
// polled as the app's page polls it. What a read shows (labShown: the lab's own parse of the
// history and its rule, page.shown_rows, exposed to the page): the replies in it, and whether it
// answers this message (``before``: the replies the read before the send showed).
async function shown(text, before) {
  const r = await call("GET", CFG.history_path);
  const s = r.status >= 200 && r.status < 300 ? await window.labShown(r.body, text, before) : {replies: -1, asked: false, answered: false};
  return Object.assign(s, {read: r});
}
// Answered by the first read that answers the message (labShown's rule).
async function polled(posted, text, before) {
  const deadline = performance.now() + CFG.timeout_ms;
  for (;;) {
    const now_ = await shown(text, before.replies);
    if (now_.answered)
      return Object.assign(now_.read, {status: posted.status, type: posted.type, body: posted.body,
                                       start: posted.start, ms: posted.ms + now_.read.ms});
    if (performance.now() > deadline)
      return Object.assign(posted, {status: null, error: `no reply showed in the history within ${CFG.timeout_ms} ms of the answer`});
    await new Promise((r) => setTimeout(r, CFG.poll_ms));
  }
}
// [stream] follow: the reply streams on a second request the chat's answer names (202 {"turn":
// ...}, then GET /api/turns/{turn}/events) -- read, or cut, as a streamed chat answer is; the
// send left when its POST did. Not answered where that stream cannot be had: the message may
// be stored all the same.
async function follow(posted, mode) {
  let turn;
  try { turn = pick(JSON.parse(posted.body), CFG.stream_follow_id); } catch (e) {}
  if (turn === undefined || turn === null || typeof turn === "object")
    return Object.assign(posted, {status: null, error: `the chat's answer holds no ${CFG.stream_follow_id} naming its reply's stream: ${posted.body.slice(0, 120)}`});
  const got = await call("GET", CFG.stream_follow.replace("{turn}", encodeURIComponent(String(turn))), undefined, mode);
  if (!(got.status >= 200 && got.status < 300))
    return Object.assign(got, {status: null, start: posted.start,
                               error: `the reply's stream answered ${got.status === null ? got.error : "HTTP " + got.status}`});
  return Object.assign(got, {start: posted.start, ms: posted.ms + got.ms});
}
// The send after which the user refreshes at once: the answer is kept in sessionStorage (it
// survives the reload; the lab reads it back there) and the reload starts in the same task
// as its arrival -- no round trip to the lab between the two.
// (lab window: delayMs after the answer -- the user who reads it first.)
window.labSendThenReload = async (text, id, streamed, mode, delayMs) => {
  const out = await labSend(text, id, streamed, mode);
  try { sessionStorage.setItem(CFG.answer_key, JSON.stringify(out)); } catch (e) {}
  if (delayMs) await new Promise(r => setTimeout(r, delayMs));
  location.reload();
  return out;
};
window.labHistory = async () => {
  const failed = await ensureSession();
  if (failed) return failed;
  // An id that only the first answer gives: before it, there is no conversation to read.
  if (CFG.session.carrier !== "cookie" && !sid())
    return {status: 200, type: "", body: "", ms: 0, error: null, cut: null, empty: true, start: now(), end: now()};
  return call("GET", CFG.history_path);
};
// What a user sees after a (re)load: the history as the page fetched it on load.
window.labLoaded = labHistory().then(r => {
  const ol = document.getElementById("history");
  ol.textContent = "";
  const li = document.createElement("li"); li.textContent = r.body.slice(0, 2000); ol.appendChild(li);
  return r;
});
</script></body></html>"""


def html(spec: Spec, token: str | None = None) -> str:
    """The page for ``spec``; ``token``: the login's (filled into {token} of a transport's path).
    The page is served from memory, never written: a token in it stays out of every file."""
    t = spec.transport
    cfg = {
        "message_field": spec.chat.message_field,
        "chat_body": spec.chat.body,
        "hidden_from": spec.chat.hidden_from,
        "chat_headers": spec.chat.headers,
        "csrf_cookie": spec.http.csrf_cookie,
        "csrf_header": spec.http.csrf_header,
        "csrf_meta": spec.http.csrf_meta,
        "id_field": spec.chat.id_field,
        "chat_path": spec.chat.path,
        "history_path": spec.history.path,
        "timeout_ms": int(spec.chat.timeout_s * 1000),
        "stream_request": spec.stream.request if spec.stream else {},
        "stream_end": spec.stream.end if spec.stream else None,
        "reply_from": spec.chat.reply_from,
        "poll_ms": POLL_MS,
        "stream_follow": spec.stream.follow if spec.stream else None,
        "stream_follow_id": spec.stream.follow_id if spec.stream else None,
        "answer_key": ANSWER_KEY,
        "session": dataclasses.asdict(spec.session),
        "session_key": SESSION_KEY,
        # from = redirect: the id in the path the GET led to (page_url's {session})
        "session_url_re": page_url_pattern(spec.session.page_url),
        "transport": dataclasses.asdict(t) if t else None,
        "token": token,
    }
    client = f'<script src="{t.client_script}"></script>' if t and t.kind == "socketio" else ""
    # </ cannot close the script: JSON of the spec's strings is inert inside it.
    page = _HTML.replace("__SESSION_JS__", SESSION_JS + FRAMES_JS).replace("__CLIENT__", client)
    return page.replace("__CFG__", json.dumps(cfg).replace("</", "<\\/")).replace(
        "__NAME__", spec.name.replace("<", "&lt;")
    )
