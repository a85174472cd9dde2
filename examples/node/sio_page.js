'use strict';
// Written without the lab (2026-12-06): a target of lab investigate, examples/node-sio-page.toml.
// Its page emits 'user_message' {conv, content}; the reply streams as 'assistant_delta' events.

const http = require('node:http');
const express = require('express');
const { Server } = require('socket.io');
const { Redis } = require('ioredis');

const PORT = Number(process.env.PORT || 3000);
const HOST = '127.0.0.1';
const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const TTL_SECONDS = 86400;
const DELTA_INTERVAL_MS = 20;

// Deliberate, opt-in bugs (comma-separated): no_await_store, expire_once
const BUGS = new Set(
  (process.env.APP_BUGS || '').split(',').map((s) => s.trim()).filter(Boolean)
);

// The client's transports, comma-separated (SIO_TRANSPORTS=polling: long-polling only, as behind
// a proxy that passes no WebSocket); unset, Socket.IO's default (polling, then the upgrade).
const TRANSPORTS = (process.env.SIO_TRANSPORTS || '').split(',').map((s) => s.trim()).filter(Boolean);
const IO_OPTIONS = TRANSPORTS.length ? JSON.stringify({ transports: TRANSPORTS }) : '';

const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 2 });
redis.on('error', (err) => console.error('[redis]', err.message));

const logKey = (conv) => `conv:${conv}:log`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function validConv(conv) {
  return typeof conv === 'string' && /^[A-Za-z0-9_-]{1,64}$/.test(conv);
}

// Run a MULTI and throw if the transaction or any of its commands failed.
async function execOrThrow(multi) {
  const results = await multi.exec();
  if (!results) throw new Error('transaction aborted');
  for (const [err] of results) if (err) throw err;
  return results;
}

async function storeUserRow(conv, content) {
  const key = logKey(conv);
  const row = JSON.stringify({ r: 'u', c: content, ts: Date.now() });
  if (BUGS.has('expire_once')) {
    const len = await redis.llen(key);
    const m = redis.multi().rpush(key, row);
    if (len === 0) m.expire(key, TTL_SECONDS);
    return execOrThrow(m);
  }
  return execOrThrow(redis.multi().rpush(key, row).expire(key, TTL_SECONDS));
}

function assistantMulti(conv, content) {
  const key = logKey(conv);
  const row = JSON.stringify({ r: 'a', c: content, ts: Date.now() });
  const m = redis.multi().rpush(key, row);
  if (!BUGS.has('expire_once')) m.expire(key, TTL_SECONDS);
  return m;
}

function cannedReply(content) {
  const firstThree = content.trim().split(/\s+/).slice(0, 3).join(' ');
  return `You said "${firstThree}" — that's an interesting point, and here is a thoughtful canned answer about it.`;
}

const app = express();

app.get('/healthz', async (_req, res) => {
  try {
    await redis.ping();
    res.json({ ok: true });
  } catch (err) {
    res.status(503).json({ ok: false, error: err.message });
  }
});

app.get('/api/history', async (req, res) => {
  const conv = req.query.conv;
  if (!validConv(conv)) return res.status(400).json({ error: 'invalid conv' });
  try {
    const raw = await redis.lrange(logKey(conv), 0, -1);
    const log = [];
    for (const s of raw) {
      try { log.push(JSON.parse(s)); } catch { /* skip corrupt row */ }
    }
    res.json({ log });
  } catch (err) {
    console.error('[history]', err.message);
    res.status(500).json({ error: 'storage unavailable' });
  }
});

app.get('/', (_req, res) => {
  res.type('html').send(PAGE);
});

const server = http.createServer(app);
const io = new Server(server);

io.on('connection', (socket) => {
  socket.on('user_message', async (msg) => {
    const conv = msg && msg.conv;
    const content = msg && typeof msg.content === 'string' ? msg.content.trim() : '';
    if (!validConv(conv) || !content || content.length > 4000) {
      socket.emit('server_error', { conv: conv ?? null, message: 'invalid message' });
      return;
    }

    try {
      await storeUserRow(conv, content);
    } catch (err) {
      console.error('[store user]', err.message);
      socket.emit('server_error', { conv, message: 'could not store your message' });
      return;
    }

    const reply = cannedReply(content);
    const words = reply.split(' ');
    for (let i = 0; i < words.length; i++) {
      if (!socket.connected) return;
      socket.emit('assistant_delta', { conv, delta: (i ? ' ' : '') + words[i] });
      await sleep(DELTA_INTERVAL_MS);
    }

    if (BUGS.has('no_await_store')) {
      assistantMulti(conv, reply).exec().catch(() => {});
      socket.emit('assistant_done', { conv, content: reply });
      return;
    }

    try {
      await execOrThrow(assistantMulti(conv, reply));
    } catch (err) {
      console.error('[store assistant]', err.message);
      socket.emit('server_error', { conv, message: 'could not store the reply' });
      return;
    }
    socket.emit('assistant_done', { conv, content: reply });
  });
});

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>sio_chat</title>
<style>
  body { font-family: system-ui, sans-serif; max-width: 720px; margin: 2rem auto; }
  #log { border: 1px solid #ccc; padding: .5rem; height: 60vh; overflow-y: auto; }
  .msg { margin: .4rem 0; padding: .4rem .6rem; border-radius: 6px; white-space: pre-wrap; }
  .u { background: #e3f0ff; text-align: right; }
  .a { background: #f1f1f1; }
  .pending { opacity: .7; }
  .err { background: #ffe3e3; color: #900; }
  form { display: flex; gap: .5rem; margin-top: .5rem; }
  input { flex: 1; padding: .4rem; }
</style>
</head>
<body>
<h1>Chat</h1>
<div id="log"></div>
<form id="f"><input id="t" autocomplete="off" placeholder="Say something"><button>Send</button></form>
<script src="/socket.io/socket.io.js"></script>
<script>
  let convId = localStorage.getItem('conv_id');
  if (!convId) { convId = crypto.randomUUID(); localStorage.setItem('conv_id', convId); }

  const logEl = document.getElementById('log');
  let pending = null;

  function add(cls, text) {
    const d = document.createElement('div');
    d.className = 'msg ' + cls;
    d.textContent = text;
    logEl.appendChild(d);
    logEl.scrollTop = logEl.scrollHeight;
    return d;
  }

  fetch('/api/history?conv=' + convId)
    .then((r) => r.json())
    .then((data) => { for (const row of data.log || []) add(row.r === 'u' ? 'u' : 'a', row.c); })
    .catch((e) => add('err', 'Could not load history: ' + e.message));

  const socket = io(${IO_OPTIONS});

  socket.on('assistant_delta', ({ conv, delta }) => {
    if (conv !== convId) return;
    if (!pending) pending = add('a pending', '');
    pending.textContent += delta;
    logEl.scrollTop = logEl.scrollHeight;
  });

  socket.on('assistant_done', ({ conv, content }) => {
    if (conv !== convId) return;
    if (!pending) pending = add('a', '');
    pending.textContent = content;
    pending.classList.remove('pending');
    pending = null;
  });

  socket.on('server_error', ({ conv, message }) => {
    if (conv && conv !== convId) return;
    if (pending) { pending.remove(); pending = null; }
    add('err', 'Error: ' + message);
  });

  document.getElementById('f').addEventListener('submit', (e) => {
    e.preventDefault();
    const input = document.getElementById('t');
    const text = input.value.trim();
    if (!text) return;
    add('u', text);
    socket.emit('user_message', { conv: convId, content: text });
    input.value = '';
  });
</script>
</body>
</html>`;

server.listen(PORT, HOST, () => {
  console.log(`sio_chat listening on http://${HOST}:${PORT} (redis ${REDIS_URL}${BUGS.size ? ', bugs: ' + [...BUGS].join(',') : ''})`);
});

function shutdown() {
  io.close();
  server.close(() => redis.quit().finally(() => process.exit(0)));
  setTimeout(() => process.exit(0), 3000).unref();
}
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
