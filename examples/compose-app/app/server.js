/*
 * A chat backend on Express and ioredis, run by its team with Docker Compose (../compose.yaml):
 * a target for `lab investigate` that lives in a compose file of its own. Correct by default:
 * each row is appended with an awaited MULTI RPUSH + EXPIRE, and a failed store answers 503.
 *
 * Contract (REDIS_URL and PORT from the environment; listens on HOST, default 0.0.0.0):
 *   POST /api/conversations -> 201 {"id": 32 hex}
 *   POST /api/conversations/:id/messages {"content": non-empty string <= 4000}
 *     -> 200 {"reply": ...} once the user's row and the reply are stored;
 *        400 {detail} for a bad body or id; 503 {"detail": "storage unavailable"} when a store fails;
 *        502 {"detail": "the model failed"} when the model call fails (the user's row is kept).
 *   The reply: "Echo: " + content; with OLLAMA_HOST set (e.g. http://host.docker.internal:11434),
 *   Ollama's answer (POST /api/chat, not streamed, model OLLAMA_MODEL, default llama3.2) to the
 *   conversation so far, read from Redis, plus the new message.
 *   GET /api/conversations/:id/messages -> 200 {"messages": [{role, content}...]} oldest first
 *     (an unknown id: []); 503 when Redis fails. Not cacheable.
 *   GET /healthz -> 200 {"ok": true}. Errors are JSON, never HTML.
 *   Storage: Redis list conv:{id}, each row JSON {"role": "user"|"assistant", "content"},
 *   TTL 7 days renewed at every append.
 *
 * APP_BUGS (comma-separated; empty = correct):
 *   swallow_errors     a failed store is logged and the reply is sent anyway: the browser shows an
 *                      answer that was never stored (lab investigate: acked_while_unreachable)
 *   store_after_model  the user's row is stored with the reply, once the model has answered: a
 *                      failed model call loses the message the page showed sent
 *                      (lab investigate: lost_after_model_error)
 */
'use strict';

const crypto = require('node:crypto');
const express = require('express');
const Redis = require('ioredis');

const KNOWN_BUGS = new Set(['swallow_errors', 'store_after_model']);
const BUGS = new Set((process.env.APP_BUGS || '').split(',').map((b) => b.trim()).filter(Boolean));
const unknown = [...BUGS].filter((b) => !KNOWN_BUGS.has(b));
if (unknown.length) {
  console.error(`APP_BUGS: unknown ${JSON.stringify(unknown)}; known: ${JSON.stringify([...KNOWN_BUGS])}`);
  process.exit(2);
}
for (const name of ['REDIS_URL', 'PORT']) {
  if (!process.env[name]) {
    console.error(`${name} is required (e.g. REDIS_URL=redis://redis:6379/0 PORT=3000)`);
    process.exit(2);
  }
}

const TTL_S = 7 * 24 * 3600;
const MAX_TEXT = 4000;
const ID_RE = /^[0-9a-f]{32}$/;
const STORAGE_DOWN = 'storage unavailable';

// Bounded: a command fails within seconds when Redis is unreachable or stalled, never hangs.
// No blind re-send after a reconnect: an RPUSH whose reply was lost may have been applied.
const redis = new Redis(process.env.REDIS_URL, {
  maxRetriesPerRequest: 1,
  autoResendUnfulfilledCommands: false,
  connectTimeout: 3000,
  commandTimeout: 5000,
});
let lastError = '';
redis.on('error', (err) => {
  const line = `redis: ${err.code || err.name}: ${err.message}`;
  if (line !== lastError) console.error(line); // one line per distinct error, not per retry
  lastError = line;
});
redis.on('ready', () => { lastError = ''; });

const key = (id) => `conv:${id}`;

const OLLAMA = (process.env.OLLAMA_HOST || '').replace(/\/+$/, '');
const OLLAMA_MODEL = process.env.OLLAMA_MODEL || 'llama3.2';
const MODEL_TIMEOUT_MS = 30000;

class ModelFailed extends Error {}

// The reply to `content`, given the conversation so far (oldest first).
async function answer(history, content) {
  if (!OLLAMA) return 'Echo: ' + content;
  const messages = [...history.map(({ role, content: c }) => ({ role, content: c })), { role: 'user', content }];
  let res;
  try {
    res = await fetch(`${OLLAMA}/api/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: OLLAMA_MODEL, messages, stream: false }),
      signal: AbortSignal.timeout(MODEL_TIMEOUT_MS),
    });
  } catch (err) {
    throw new ModelFailed(`ollama: ${err.message}`);
  }
  if (!res.ok) throw new ModelFailed(`ollama: HTTP ${res.status}`);
  const body = await res.json();
  if (!body.message || typeof body.message.content !== 'string') throw new ModelFailed('ollama: no message in the answer');
  return body.message.content;
}

async function append(id, row) {
  const results = await redis.multi().rpush(key(id), JSON.stringify(row)).expire(key(id), TTL_S).exec();
  for (const [err] of results || [[new Error('MULTI aborted')]]) if (err) throw err;
}

// The store as the team wrote it; with swallow_errors the failure goes to the log only.
async function store(id, row) {
  try {
    await append(id, row);
  } catch (err) {
    console.error(`conversation ${id}: storing a ${row.role} row failed: ${err.message}`);
    if (!BUGS.has('swallow_errors')) throw err;
  }
}

const app = express();
app.disable('x-powered-by');
app.set('etag', false);
app.use(express.json({ limit: '64kb' }));

app.get('/healthz', (req, res) => res.json({ ok: true }));

app.post('/api/conversations', (req, res) => {
  res.status(201).json({ id: crypto.randomUUID().replaceAll('-', '') });
});

app.param('id', (req, res, next, id) => {
  if (!ID_RE.test(id)) return res.status(400).json({ detail: 'the conversation id must be 32 hex characters' });
  next();
});

app.post('/api/conversations/:id/messages', async (req, res) => {
  const content = req.body && req.body.content;
  if (typeof content !== 'string' || !content || content.length > MAX_TEXT) {
    return res.status(400).json({ detail: `content must be a non-empty string of at most ${MAX_TEXT} characters` });
  }
  const id = req.params.id;
  const late = BUGS.has('store_after_model');
  let reply;
  try {
    // The model is given the conversation so far; echo replies need none (no read).
    const history = OLLAMA ? (await redis.lrange(key(id), 0, -1)).map((r) => JSON.parse(r)) : [];
    if (!late) await store(id, { role: 'user', content });
    reply = await answer(history, content);
    if (late) await store(id, { role: 'user', content });
    await store(id, { role: 'assistant', content: reply });
  } catch (err) {
    if (err instanceof ModelFailed) {
      console.error(`conversation ${id}: ${err.message}`);
      return res.status(502).json({ detail: 'the model failed' });
    }
    return res.status(503).json({ detail: STORAGE_DOWN });
  }
  res.json({ reply });
});

app.get('/api/conversations/:id/messages', async (req, res) => {
  res.set('Cache-Control', 'no-store');
  try {
    const rows = await redis.lrange(key(req.params.id), 0, -1);
    res.json({ messages: rows.map((r) => JSON.parse(r)) });
  } catch (err) {
    console.error(`history ${req.params.id}: ${err.message}`);
    res.status(503).json({ detail: STORAGE_DOWN });
  }
});

app.use((req, res) => res.status(404).json({ detail: `no route for ${req.method} ${req.path}` }));
// eslint-disable-next-line no-unused-vars
app.use((err, req, res, next) => {
  const status = Number.isInteger(err.status) && err.status >= 400 && err.status < 600 ? err.status : 500;
  if (status >= 500) console.error(`${req.method} ${req.originalUrl}: ${err.stack || err}`);
  if (res.headersSent) return res.end();
  res.status(status).json({ detail: status >= 500 ? 'internal error' : err.message });
});

const host = process.env.HOST || '0.0.0.0'; // in a container: reachable from the published port
const server = app.listen(Number(process.env.PORT), host, () => {
  const bugs = BUGS.size ? [...BUGS].join(',') : 'none';
  const model = OLLAMA ? `ollama ${OLLAMA}` : 'echo';
  console.log(`compose-app on http://${host}:${process.env.PORT} (redis ${process.env.REDIS_URL}, replies: ${model}, bugs: ${bugs})`);
});

// docker stop sends SIGTERM: finish in-flight requests, close Redis, exit (3 s hard deadline).
for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    console.log(`${sig}: shutting down`);
    setTimeout(() => process.exit(0), 3000).unref();
    server.close(() => redis.quit().finally(() => process.exit(0)));
  });
}
