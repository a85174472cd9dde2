"""The lab's page, its parts for apps unlike a cookie + JSON POST backend: where the session id
goes (a header, a query parameter, a path segment; kept in localStorage, as an app's page keeps
it, so a refresh keeps it and a new browser has none), and replies over a WebSocket or Socket.IO
(frames in, one connection per page as a chat page keeps one, cut by closing it as a refresh does).

Both are JavaScript inlined into lab/investigate/browser/page.py's page; ``CFG`` is its config.
"""

from __future__ import annotations

# Where the lab's page keeps a session id it was given (a create call's, the first answer's).
SESSION_KEY = "__chaoslab_session"

SESSION_JS = """
function pick(doc, path) {  // $.a.b of a JSON value; undefined where a step is missing
  let node = doc;
  for (const step of (path || "$").split(".").slice(1)) {
    if (node === null || typeof node !== "object" || !(step in node)) return undefined;
    node = node[step];
  }
  return node;
}
function sid() {
  const S = CFG.session;
  if (S.carrier === "cookie") return null;  // the browser sends the app's cookie itself
  if (S.source === "fixed" && !["{random}", "{uuid}"].some((m) => S.value.includes(m))) return S.value;
  let id = localStorage.getItem(CFG.session_key);
  if (!id && S.source === "fixed") {  // an id the page makes itself, once per browser, as many pages do
    id = S.value.split("{random}").join(crypto.randomUUID().split("-").join("")).split("{uuid}").join(crypto.randomUUID());
    localStorage.setItem(CFG.session_key, id);
  }
  return id;
}
function keep(id) {  // the first id the app gives is the conversation's; later ones do not move it
  if (id === undefined || id === null || id === "" || CFG.session.source !== "answer") return;
  if (!localStorage.getItem(CFG.session_key)) localStorage.setItem(CFG.session_key, String(id));
}
function keepFrom(body) {  // a whole JSON answer, else a stream's first event (SSE data:, NDJSON) holding it
  if (CFG.session.source !== "answer") return;
  for (const part of [body, ...String(body).split("\\n").map(l => l.replace(/^data:\\s*/, ""))]) {
    let id;
    try { id = pick(JSON.parse(part), CFG.session.id_path); } catch (e) { continue; }
    if (id !== undefined && id !== null && id !== "") { keep(id); return; }
  }
}
// from = create: the page creates its conversation on open, as an app's page does; a failed
// create is that answer (the send or read that needed it fails with it).
async function ensureSession() {
  const S = CFG.session;
  if (S.source === "redirect" && !sid()) return redirected(S);
  if (S.source !== "create" || sid()) return null;
  const r = await call("POST", S.create_path);
  if (r.status >= 200 && r.status < 300) {
    try {
      const id = pick(JSON.parse(r.body), S.id_path);
      if (id !== undefined && id !== null && id !== "") localStorage.setItem(CFG.session_key, String(id));
    } catch (e) {}
  }
  if (sid()) return null;
  r.error = r.error || `creating the conversation: POST ${S.create_path} gave no id at ${S.id_path}`;
  if (r.status >= 200 && r.status < 300) r.status = null;  // a 2xx without an id is no answer
  return r;
}
// from = redirect: a GET (/) or a POST (a "New chat" form) answered with a redirect to the
// conversation's page (/c/<id>), as a server-rendered app makes its ids; the id read from where
// it led (the browser followed it).
async function redirected(S) {
  const t0 = performance.now(), start = now();
  let url = "", status = null, error = null;
  try {
    const r = await fetch(S.create_path, {method: S.create_method, credentials: "same-origin"});
    [url, status] = [new URL(r.url).pathname, r.status];
    const m = url.match(new RegExp(CFG.session_url_re));
    if (r.ok && m) localStorage.setItem(CFG.session_key, decodeURIComponent(m[1]));
  } catch (e) { error = String(e); }
  if (sid()) return null;
  return {status: status && status < 300 ? null : status, type: "", body: "", ms: performance.now() - t0, cut: null,
          error: error || `creating the conversation: ${S.create_method} ${S.create_path} led to ${url || "nothing"}, not ${S.page_url}`,
          start, end: now()};
}
function target(path) {  // a request's path with the session (and the login's token) where the spec puts them
  const S = CFG.session, id = sid();
  let p = path.split("{token}").join(encodeURIComponent(CFG.token || ""));
  if (S.carrier === "path") p = p.split("{session}").join(encodeURIComponent(id || ""));
  if (S.carrier === "query" && id)
    p += (p.includes("?") ? "&" : "?") + encodeURIComponent(S.name) + "=" + encodeURIComponent(id);
  return p;
}
function sessionHeaders() {
  const S = CFG.session, id = sid();
  return S.carrier === "header" && id ? {[S.name]: id} : {};
}
"""

FRAMES_JS = """
let conn = null;  // one connection per page, opened at its first send
function wsConn(T) {
  const url = new URL(target(T.path), location.href);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  const ws = new WebSocket(url.href);
  const c = {alive: true, listeners: [], send: f => ws.send(JSON.stringify(f)), close: () => ws.close()};
  c.ready = new Promise((res, rej) => {
    ws.onopen = res;
    ws.onclose = ev => {
      c.alive = false;
      rej(new Error(`websocket closed (${ev.code})`));
      c.listeners.slice().forEach(l => l(null, {code: ev.code}));
    };
  });
  ws.onmessage = ev => {
    let d;
    try { d = JSON.parse(ev.data); } catch (e) { d = {raw: String(ev.data)}; }
    const kind = d !== null && typeof d === "object" ? d[T.type_field] : undefined;
    c.listeners.slice().forEach(l => l(kind, d));
  };
  return c;
}
function sioConn(T) {
  // No automatic reconnection: a connection the lab cut stays cut, the next send opens another.
  const s = io(location.origin, {path: T.path, forceNew: true, reconnection: false,
                                 auth: CFG.token ? {token: CFG.token} : {}});
  const c = {alive: true, listeners: [], send: f => s.emit(T.event, f), close: () => s.disconnect()};
  c.ready = new Promise((res, rej) => { s.on("connect", res); s.on("connect_error", rej); });
  s.onAny((event, d) => c.listeners.slice().forEach(l => l(event, d)));
  s.on("disconnect", reason => {
    c.alive = false;
    c.listeners.slice().forEach(l => l(null, {reason}));
  });
  return c;
}
// One message out as a frame; its answer from the frames back. status 200 once acknowledged
// (the ack frame, else the first reply frame), 503 for the app's error frame, null for none.
async function frameSend(text, mode) {
  const T = CFG.transport, t0 = performance.now(), start = now();
  const out = {status: null, type: "frames", body: "", ms: 0, error: null, cut: null, start, end: null,
               reply: null, frames: 0};
  let c = conn;
  try {
    if (!c || !c.alive) c = conn = T.kind === "socketio" ? sioConn(T) : wsConn(T);
    await c.ready;
  } catch (e) {
    conn = null;
    return Object.assign(out, {error: "connect: " + String(e), ms: performance.now() - t0, end: now()});
  }
  const frame = Object.assign({}, T.message);
  frame[CFG.message_field] = text;
  if (CFG.session.field) frame[CFG.session.field] = sid();
  const chunks = [];
  return await new Promise(resolve => {
    let timer = null;
    const finish = error => {
      clearTimeout(timer);
      c.listeners = c.listeners.filter(l => l !== on);
      out.error = out.error || error;
      out.end = out.end || now();
      out.body = chunks.join("");
      resolve(out);
    };
    const acked = () => { if (out.status === null) { out.status = 200; out.ms = performance.now() - t0; } };
    const on = (kind, d) => {
      if (kind === null) return finish(out.reply === null ? "the connection closed before the reply ended" : null);
      out.frames++;
      if (CFG.session.source === "answer") keep(pick(d, CFG.session.id_path));
      if (T.ack && kind === T.ack) acked();
      else if (T.error && kind === T.error) {
        out.status = 503;  // the app says the send failed: it may have landed
        finish("error frame: " + JSON.stringify(d).slice(0, 160));
      } else if (kind === T.chunk) {
        if (!T.ack) acked();
        const piece = pick(d, T.chunk_text);
        chunks.push(piece === undefined ? "" : String(piece));
        if (mode === "cut" && chunks.length === 1) {  // the user leaves mid-reply
          out.cut = true;
          out.end = now();
          conn = null;
          c.close();
          finish(null);
        }
      } else if (kind === T.end) {
        if (!T.ack) acked();
        const whole = T.end_text ? pick(d, T.end_text) : undefined;
        out.reply = whole === undefined ? chunks.join("") : String(whole);
        if (mode === "cut") out.cut = false;  // it ended before a second frame: nothing to cut
        finish(null);
      }
    };
    c.listeners.push(on);
    timer = setTimeout(() => finish(`no ${T.end} frame within ${CFG.timeout_ms} ms`), CFG.timeout_ms);
    c.send(frame);
  });
}
"""
