'use strict';
// A chat app written without the lab (a target of lab investigate: examples/node-live.toml):
// Express serves the page, a plain WebSocket (the ws package, /live?visitor=<id>) carries the
// chat in frames of its own ({"kind":"utter"} out; "piece" ... "complete", or "fault"), the
// page mints the visitor's id and keeps it in localStorage, the history is a Redis List of JSON
// turns (RPUSH, LTRIM, EXPIRE in one MULTI), the model is streamed over plain fetch.
//
// APP_BUGS=unawaited_store: "complete" sent, the store a promise nobody awaits (.catch logs)
//   -> acked_write_refused. APP_BUGS=retry_push: the MULTI retried on any error (a 300 ms
//   command timeout), pushing the turns again -> duplicates.

const http = require('http');
const path = require('path');
const express = require('express');
const { WebSocketServer } = require('ws');
const Redis = require('ioredis');

const PORT = Number(process.env.PORT || 3000);
const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const OPENAI_BASE_URL = (process.env.OPENAI_BASE_URL || 'https://api.openai.com/v1').replace(/\/+$/, '');
const OPENAI_API_KEY = process.env.OPENAI_API_KEY || '';
const MODEL = 'gpt-4o-mini';

const KEEP_TURNS = 400;          // LTRIM to the last 400 items
const TTL_SECONDS = 12 * 60 * 60; // 12 hours

const BUGS = new Set(
  (process.env.APP_BUGS || '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
);
const KNOWN_BUGS = new Set(['unawaited_store', 'retry_push']);
for (const b of [...BUGS]) {
  if (!KNOWN_BUGS.has(b)) {
    console.warn(`[warn] unknown APP_BUGS entry ignored: ${b}`);
    BUGS.delete(b);
  }
}

const redisOpts = {};
if (BUGS.has('retry_push')) {
  // "Fail fast and retry" — a short per-command timeout.
  redisOpts.commandTimeout = 300;
}
const redis = new Redis(REDIS_URL, redisOpts);
redis.on('error', (e) => console.error('[redis]', e.message));

const VISITOR_RE = /^[A-Za-z0-9_-]{8,64}$/;
const turnsKey = (visitor) => `vis:${visitor}:turns`;

// ---------------------------------------------------------------- storage

async function readTurns(visitor) {
  const raw = await redis.lrange(turnsKey(visitor), 0, -1);
  const out = [];
  for (const item of raw) {
    try {
      const t = JSON.parse(item);
      if (t && typeof t.who === 'string' && typeof t.said === 'string') out.push(t);
    } catch {
      // skip corrupt entries rather than failing the whole read
    }
  }
  return out;
}

function pushTurns(visitor, turns) {
  const key = turnsKey(visitor);
  return redis
    .multi()
    .rpush(key, ...turns.map((t) => JSON.stringify(t)))
    .ltrim(key, -KEEP_TURNS, -1)
    .expire(key, TTL_SECONDS)
    .exec()
    .then((results) => {
      // ioredis resolves exec() with [[err, res], ...]; surface per-command errors
      if (!results) throw new Error('transaction aborted');
      for (const [err] of results) if (err) throw err;
      return results;
    });
}

async function storeTurns(visitor, turns) {
  if (!BUGS.has('retry_push')) return pushTurns(visitor, turns);
  let lastErr;
  for (let attempt = 1; attempt <= 3; attempt++) {
    try {
      return await pushTurns(visitor, turns);
    } catch (e) {
      lastErr = e;
      console.warn(`[store] attempt ${attempt} failed for ${visitor}: ${e.message}`);
    }
  }
  throw lastErr;
}

// ---------------------------------------------------------------- model

async function* streamCompletion(messages, signal) {
  const res = await fetch(`${OPENAI_BASE_URL}/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${OPENAI_API_KEY}`,
    },
    body: JSON.stringify({ model: MODEL, stream: true, messages }),
    signal,
  });
  if (!res.ok || !res.body) {
    let detail = '';
    try { detail = (await res.text()).slice(0, 300); } catch {}
    throw new Error(`model HTTP ${res.status}${detail ? ': ' + detail : ''}`);
  }
  const decoder = new TextDecoder();
  let buf = '';
  for await (const chunk of res.body) {
    buf += decoder.decode(chunk, { stream: true });
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl).replace(/\r$/, '');
      buf = buf.slice(nl + 1);
      if (!line.startsWith('data:')) continue;
      const data = line.slice(5).trim();
      if (data === '[DONE]') return;
      let evt;
      try { evt = JSON.parse(data); } catch { continue; }
      if (evt.error) throw new Error(`model error: ${evt.error.message || JSON.stringify(evt.error)}`);
      const delta = evt.choices && evt.choices[0] && evt.choices[0].delta;
      if (delta && typeof delta.content === 'string' && delta.content.length) yield delta.content;
    }
  }
}

// ---------------------------------------------------------------- http

const app = express();
app.disable('x-powered-by');

app.get('/', (req, res) => {
  res.sendFile(path.join(__dirname, 'live.html'));
});

app.get('/api/visitors/:id/log', async (req, res) => {
  const visitor = req.params.id;
  if (!VISITOR_RE.test(visitor)) return res.status(400).json({ error: 'bad visitor id' });
  try {
    const turns = await readTurns(visitor);
    res.json({ visitor, turns });
  } catch (e) {
    console.error('[log]', e);
    res.status(503).json({ error: 'history unavailable' });
  }
});

app.get('/healthz', (req, res) => res.json({ ok: true, bugs: [...BUGS] }));

const server = http.createServer(app);

// ---------------------------------------------------------------- websocket

const wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 });

server.on('upgrade', (req, socket, head) => {
  let url;
  try { url = new URL(req.url, 'http://localhost'); } catch { socket.destroy(); return; }
  if (url.pathname !== '/live') {
    socket.write('HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n');
    socket.destroy();
    return;
  }
  const visitor = url.searchParams.get('visitor') || '';
  if (!VISITOR_RE.test(visitor)) {
    socket.write('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    socket.destroy();
    return;
  }
  wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, visitor));
});

function send(ws, frame) {
  if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(frame));
}

wss.on('connection', (ws, visitor) => {
  let busy = false;
  const abort = new AbortController();
  ws.on('close', () => abort.abort());
  ws.on('error', (e) => console.error('[ws]', e.message));

  send(ws, { kind: 'hello', visitor });

  ws.on('message', async (data, isBinary) => {
    let frame;
    try { frame = JSON.parse(isBinary ? '' : data.toString('utf8')); } catch { frame = null; }
    if (!frame || frame.kind !== 'utter' || typeof frame.body !== 'string') {
      send(ws, { kind: 'fault', why: 'expected {"kind":"utter","body":"..."}' });
      return;
    }
    const body = frame.body.trim();
    if (!body) { send(ws, { kind: 'fault', why: 'empty message' }); return; }
    if (body.length > 8000) { send(ws, { kind: 'fault', why: 'message too long' }); return; }
    if (busy) { send(ws, { kind: 'fault', why: 'still answering the previous message' }); return; }
    busy = true;
    try {
      await handleTurn(ws, visitor, body, abort.signal);
    } finally {
      busy = false;
    }
  });
});

async function handleTurn(ws, visitor, body, signal) {
  const userTurn = { who: 'user', said: body, at: Date.now() };

  let history;
  try {
    history = await readTurns(visitor);
  } catch (e) {
    console.error('[turn] history read failed', e);
    send(ws, { kind: 'fault', why: 'could not read history' });
    return;
  }

  const messages = history.map((t) => ({ role: t.who, content: t.said }));
  messages.push({ role: 'user', content: body });

  let answer = '';
  let seq = 0;
  try {
    for await (const piece of streamCompletion(messages, signal)) {
      answer += piece;
      send(ws, { kind: 'piece', seq: seq++, text: piece });
    }
  } catch (e) {
    if (signal.aborted) return; // client went away mid-stream; nothing to store
    console.error('[turn] model failed', e.message);
    send(ws, { kind: 'fault', why: 'model call failed' });
    return;
  }
  if (signal.aborted) return;

  const botTurn = { who: 'assistant', said: answer, at: Date.now() };

  if (BUGS.has('unawaited_store')) {
    send(ws, { kind: 'complete', pieces: seq, chars: answer.length });
    storeTurns(visitor, [userTurn, botTurn]).catch((e) => console.error(e));
    return;
  }

  try {
    await storeTurns(visitor, [userTurn, botTurn]);
  } catch (e) {
    console.error('[turn] store failed', e.message);
    send(ws, { kind: 'fault', why: 'could not save this exchange' });
    return;
  }
  send(ws, { kind: 'complete', pieces: seq, chars: answer.length });
}

// ---------------------------------------------------------------- boot

server.listen(PORT, '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${PORT} (bugs: ${[...BUGS].join(',') || 'none'})`);
});

function shutdown() {
  for (const c of wss.clients) c.terminate();
  server.close(() => {
    redis.quit().finally(() => process.exit(0));
  });
  setTimeout(() => process.exit(0), 2000).unref();
}
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
