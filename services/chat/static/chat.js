// The chat page: loads the history, sends messages (plain or streamed), shows each message's
// state: pending, saved, or "not saved" with a retry that reuses the message id.
"use strict";
const log = document.getElementById("log");
const statusEl = document.getElementById("status");
const input = document.getElementById("input");
const streamToggle = document.getElementById("stream");
if (new URLSearchParams(location.search).get("stream") === "1") streamToggle.checked = true;

function newId() {
  const b = new Uint8Array(16); crypto.getRandomValues(b);
  return Array.from(b, x => x.toString(16).padStart(2, "0")).join("");
}

function bubble(id, role, text, state) {
  const el = document.createElement("div");
  el.className = "msg " + role;
  el.dataset.testid = "message";
  el.dataset.id = id; el.dataset.role = role; el.dataset.state = state;
  const body = document.createElement("span"); body.className = "text"; body.dataset.testid = "message-text";
  body.textContent = text;
  const st = document.createElement("span"); st.className = "state"; st.dataset.testid = "message-state";
  el.append(body, st);
  log.append(el); setState(el, state);
  log.scrollTop = log.scrollHeight;
  return el;
}

function setState(el, state, why) {
  el.dataset.state = state;
  const st = el.querySelector(".state");
  st.textContent = state === "not-saved" ? "not saved" + (why ? " (" + why + ")" : "") : state;
  const old = el.querySelector("button"); if (old) old.remove();
  if (state === "not-saved") {
    const b = document.createElement("button");
    b.textContent = "retry"; b.dataset.testid = "retry-button";
    // A reply cut mid-stream retries its message: the user's text, the same id.
    b.onclick = () => {
      const same = [...log.querySelectorAll(`[data-testid=message][data-id="${el.dataset.id}"]`)];
      const mine = same.find(x => x.dataset.role === "user") || el;
      const text = mine.querySelector(".text").textContent;
      same.forEach(x => x.remove());
      send(text, el.dataset.id);
    };
    el.append(b);
  }
}

async function loadHistory() {
  try {
    const r = await fetch("/history", { headers: { "Accept": "application/json" } });
    if (!r.ok) throw new Error("HTTP " + r.status);
    const rows = await r.json();
    for (const row of rows) bubble(row.id, row.role, row.content, "saved");
    statusEl.dataset.state = rows.length ? "loaded" : "empty";
    statusEl.textContent = rows.length ? rows.length + " messages loaded" : "new conversation";
  } catch (e) {
    statusEl.dataset.state = "failed";
    statusEl.textContent = "could not load the history: " + e.message;
  }
}

async function send(text, id) {
  id = id || newId();
  const stream = streamToggle.checked;
  const mine = bubble(id, "user", text, "pending");
  let reply = null;
  try {
    const r = await fetch("/chat", {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ message: text, id: id, stream: stream }),
    });
    if (!r.ok) {
      let why = "HTTP " + r.status;
      try { const j = await r.json(); why = j.error || why; } catch (_) { /* not JSON */ }
      setState(mine, "not-saved", why); return;
    }
    if (!stream) {
      const j = await r.json();
      setState(mine, "saved");
      bubble(id, "assistant", j.reply, "saved");
      return;
    }
    const reader = r.body.getReader(); const dec = new TextDecoder(); let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl); buf = buf.slice(nl + 1);
        if (!line) continue;
        const ev = JSON.parse(line);
        if (ev.type === "token") {
          if (!reply) { reply = bubble(id, "assistant", "", "streaming"); setState(mine, "saved"); }
          reply.querySelector(".text").textContent += ev.text;
        } else if (ev.type === "end") {
          if (!reply) reply = bubble(id, "assistant", ev.reply, "saved");
          setState(mine, "saved"); setState(reply, "saved");
        }
      }
    }
    if (reply && reply.dataset.state !== "saved") setState(reply, "not-saved", "stream cut");
  } catch (e) {
    setState(mine, "not-saved", e.message);
    if (reply) setState(reply, "not-saved", "stream cut");
  }
}

document.getElementById("composer").addEventListener("submit", ev => {
  ev.preventDefault();
  const text = input.value.trim();
  if (!text) return;
  input.value = "";
  send(text);
});
loadHistory();
