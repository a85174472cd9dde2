'use strict';
// Quill: a small chat assistant page.
//
// The page (quill-views/index.ejs) is a thin shell; quill-public/app.js talks to
// the JSON API below. One conversation per browser session: the session lives
// in Redis (connect-redis), the conversation id is kept in the session and the
// turns are stored in a Redis list next to it.
//
//   GET  /                            the chat page (carries the CSRF token in a <meta>)
//   GET  /api/conversation            the current conversation
//   POST /api/conversation/messages   {"body": "..."} -> the assistant's reply
//   GET  /healthz                     liveness probe

const crypto = require('node:crypto');
const path = require('node:path');
const express = require('express');
const session = require('express-session');
const { RedisStore } = require('connect-redis');
const { createClient } = require('redis');
const { csrfSync } = require('csrf-sync');

const PORT = Number(process.env.PORT || 3000);
const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379/0';
const SESSION_SECRET = process.env.SESSION_SECRET || 'quill-dev-secret-change-me';
// Comma-separated switches for known-bad code paths we keep around to
// reproduce old incidents, e.g. QUILL_BUGS=fire_reply,ttl_on_create.
const BUGS = new Set((process.env.QUILL_BUGS || '').split(',').map((s) => s.trim()).filter(Boolean));

const KEY_PREFIX = 'quill:';
const CONVERSATION_TTL = 2 * 60 * 60; // seconds, renewed on every message
const SESSION_MAX_AGE = 3 * 24 * 60 * 60 * 1000; // ms
const MAX_BODY_LENGTH = 4000; // characters
const HISTORY_LIMIT = 200; // turns returned by GET /api/conversation

// ---------------------------------------------------------------------------
// Redis

const redis = createClient({
  url: REDIS_URL,
  // Fail fast while disconnected instead of queueing commands and leaving the
  // request hanging; the routes turn the error into a 503.
  disableOfflineQueue: true,
  socket: {
    connectTimeout: 2000,
    reconnectStrategy: (retries) => Math.min(100 * 2 ** retries, 3000),
  },
});
redis.on('error', (err) => console.error('[redis]', err.message));

const turnsKey = (conversationId) => `${KEY_PREFIX}conversation:${conversationId}:turns`;

function newTurn(speaker, body, extra = {}) {
  return {
    id: crypto.randomUUID(),
    speaker, // "member" | "quill"
    body,
    sentAt: new Date().toISOString(),
    ...extra,
  };
}

async function loadTurns(conversationId, limit = HISTORY_LIMIT) {
  const raw = await redis.lRange(turnsKey(conversationId), -limit, -1);
  const turns = [];
  for (const item of raw) {
    try {
      turns.push(JSON.parse(item));
    } catch {
      console.warn(`[store] skipping unreadable turn in ${conversationId}`);
    }
  }
  return turns;
}

async function appendTurn(conversationId, turn) {
  const key = turnsKey(conversationId);
  const length = await redis.rPush(key, JSON.stringify(turn));
  if (BUGS.has('ttl_on_create')) {
    // Give the conversation its lifetime when the list is created.
    if (length === 1) await redis.expire(key, CONVERSATION_TTL);
  } else {
    // Sliding expiry: an active conversation stays around.
    await redis.expire(key, CONVERSATION_TTL);
  }
  return length;
}

// ---------------------------------------------------------------------------
// The assistant. No model behind it, just a few rules over the message and the
// stored history, with a short pause so it feels like it is thinking.

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const NAME_RE = /\b(?:my name is|my name's|i am|i'm|call me)\s+([A-Za-z][A-Za-z'-]{0,30})/i;
const NOT_NAMES = new Set(['a', 'an', 'the', 'not', 'so', 'very', 'just', 'here', 'fine', 'good', 'ok', 'okay', 'sure', 'sorry', 'back', 'new', 'looking', 'trying', 'going', 'working']);

function extractName(text) {
  const m = NAME_RE.exec(text);
  if (!m || NOT_NAMES.has(m[1].toLowerCase())) return null;
  return m[1][0].toUpperCase() + m[1].slice(1);
}

// The most recent name the member gave us, if any.
function rememberedName(history) {
  for (let i = history.length - 1; i >= 0; i--) {
    if (history[i].speaker !== 'member') continue;
    const name = extractName(history[i].body || '');
    if (name) return name;
  }
  return null;
}

const FALLBACKS = [
  'Interesting. Can you tell me a bit more about that?',
  "I see. What have you tried so far?",
  'That makes sense. What would a good outcome look like for you?',
  "Good point. I'd break it into smaller steps and start with the easiest one.",
  'Hmm, let me think about that. What made you ask?',
];

async function composeReply(text, history) {
  await sleep(50);
  const lower = text.toLowerCase();
  const given = extractName(text);
  const name = given || rememberedName(history);

  if (given) return `Nice to meet you, ${given}! What can I help you with today?`;
  if (/\b(what'?s|what is|do you (know|remember)) my name\b/.test(lower)) {
    return name
      ? `You told me your name is ${name}.`
      : "You haven't told me your name yet. What should I call you?";
  }
  if (/^(hi|hello|hey|good (morning|afternoon|evening))\b/.test(lower)) {
    return name ? `Hello again, ${name}!` : "Hello! I'm Quill. What's on your mind?";
  }
  if (/\b(thanks|thank you|cheers)\b/.test(lower)) {
    return name ? `You're welcome, ${name}.` : "You're welcome.";
  }
  if (/\bhow many messages\b/.test(lower)) {
    const mine = history.filter((t) => t.speaker === 'member').length + 1;
    return `You've sent ${mine} message${mine === 1 ? '' : 's'} in this conversation.`;
  }
  const digest = crypto.createHash('sha1').update(lower.trim()).digest();
  const line = FALLBACKS[digest[0] % FALLBACKS.length];
  return name && digest[1] % 2 ? `${name}, ${line[0].toLowerCase()}${line.slice(1)}` : line;
}

// ---------------------------------------------------------------------------
// App

const apiError = (res, status, code, message) => res.status(status).json({ error: { code, message } });

const app = express();
app.set('view engine', 'ejs');
app.set('views', path.join(__dirname, 'quill-views'));
app.disable('x-powered-by');

// No session needed for these two.
app.get('/healthz', (req, res) => res.type('text/plain').send('ok'));
app.use('/static', express.static(path.join(__dirname, 'quill-public'), { maxAge: '1h' }));

const sessions = session({
  name: 'quill.sid',
  store: new RedisStore({ client: redis, prefix: `${KEY_PREFIX}sess:` }),
  secret: SESSION_SECRET,
  resave: false,
  saveUninitialized: false,
  cookie: {
    httpOnly: true,
    sameSite: 'lax',
    maxAge: SESSION_MAX_AGE,
    // Behind TLS, set `secure: true` (and `app.set('trust proxy', 1)`).
  },
});

// If the session store (Redis) is unreachable, say so instead of a bare 500.
app.use((req, res, next) => {
  sessions(req, res, (err) => {
    if (!err) return next();
    console.error(`[session] ${req.method} ${req.originalUrl}:`, err.message);
    if (res.headersSent) return; // failed to save after the response went out
    const message = 'Quill is temporarily unavailable. Please try again in a moment.';
    if (req.path.startsWith('/api')) return apiError(res, 503, 'store_unavailable', message);
    res.status(503).type('text/plain').send(message);
  });
});

app.use(express.json({ limit: '32kb' }));

// Synchronizer-token CSRF: the token lives in the session and the page sends it
// back in the x-csrf-token header on every POST.
const { csrfSynchronisedProtection, generateToken } = csrfSync();
app.use(csrfSynchronisedProtection);

function conversationIdFor(req) {
  if (!req.session.conversationId) req.session.conversationId = crypto.randomUUID();
  return req.session.conversationId;
}

app.get('/', (req, res) => {
  conversationIdFor(req);
  res.render('index', { csrfToken: generateToken(req) });
});

app.get('/api/conversation', async (req, res) => {
  const conversationId = conversationIdFor(req);
  let turns;
  try {
    turns = await loadTurns(conversationId);
  } catch (err) {
    console.error(`[api] load ${conversationId}:`, err.message);
    return apiError(res, 503, 'store_unavailable', 'The conversation could not be loaded right now. Please try again.');
  }
  res.json({
    conversation: {
      id: conversationId,
      assistant: { name: 'Quill' },
      turnCount: turns.length,
      turns,
    },
  });
});

app.post('/api/conversation/messages', async (req, res) => {
  const body = typeof req.body?.body === 'string' ? req.body.body.trim() : '';
  if (!body) return apiError(res, 400, 'empty_message', 'Type a message before sending.');
  if (body.length > MAX_BODY_LENGTH) {
    return apiError(res, 400, 'message_too_long', `Messages are limited to ${MAX_BODY_LENGTH} characters.`);
  }

  const conversationId = conversationIdFor(req);
  let history;
  let message;
  try {
    history = await loadTurns(conversationId);
    message = newTurn('member', body);
    await appendTurn(conversationId, message);
  } catch (err) {
    console.error(`[api] save message ${conversationId}:`, err.message);
    return apiError(res, 503, 'store_unavailable', 'Your message could not be saved. Please try again.');
  }

  const reply = newTurn('quill', await composeReply(body, history), { inReplyTo: message.id });

  if (BUGS.has('fire_reply')) {
    // Don't make the user wait on the write, the reply is already computed.
    appendTurn(conversationId, reply).catch(console.error);
  } else {
    try {
      await appendTurn(conversationId, reply);
    } catch (err) {
      console.error(`[api] save reply ${conversationId}:`, err.message);
      return apiError(res, 503, 'store_unavailable', 'The reply could not be saved. Please try again.');
    }
  }

  res.json({ message, reply });
});

app.use('/api', (req, res) => apiError(res, 404, 'not_found', 'No such endpoint.'));

// Express 5 forwards rejected promises from async handlers here too.
app.use((err, req, res, next) => {
  if (res.headersSent) return next(err);
  const wantsJson = req.path.startsWith('/api') || req.method !== 'GET';
  if (err.code === 'EBADCSRFTOKEN') {
    return apiError(res, 403, 'invalid_csrf_token', 'Your session has expired or the form is stale. Reload the page and try again.');
  }
  const status = err.status || err.statusCode || 500;
  if (status >= 500) console.error(`[error] ${req.method} ${req.originalUrl}:`, err);
  const message = status < 500 && err.expose ? err.message : 'Something went wrong on our side.';
  if (wantsJson) return apiError(res, status, status < 500 ? 'bad_request' : 'internal_error', message);
  res.status(status).type('text/plain').send(message);
});

// ---------------------------------------------------------------------------

async function main() {
  await redis.connect();
  if (BUGS.size) console.warn(`QUILL_BUGS enabled: ${[...BUGS].sort().join(', ')}`);
  const server = app.listen(PORT, '127.0.0.1', (err) => {
    // Express 5 passes listen errors (EADDRINUSE...) to this callback.
    if (err) {
      console.error(`quill could not listen on 127.0.0.1:${PORT}:`, err.message);
      process.exit(1);
    }
    console.log(`quill listening on http://127.0.0.1:${PORT}`);
  });

  const shutdown = (signal) => {
    console.log(`${signal} received, shutting down`);
    server.close(() => {
      redis.close().catch(() => redis.destroy()).finally(() => process.exit(0));
    });
    setTimeout(() => process.exit(1), 5000).unref();
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
}

main().catch((err) => {
  console.error('quill failed to start:', err);
  process.exit(1);
});
