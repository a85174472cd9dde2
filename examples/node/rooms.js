'use strict';

// A chat app written without the lab (a target of lab investigate: examples/node-rooms.toml):
// Express + ioredis, one JSON document a room (a Redis String: GET, append, SET back under
// WATCH/MULTI with its TTL), an OpenAI-compatible /chat/completions endpoint called with plain
// fetch. POST /v1/rooms answers {"room": {"slug"}}; the page keeps the slug in location.hash.
//
// APP_BUGS=no_watch: a plain GET then SET -> two tabs' turns overwrite each other (lost_update).
// APP_BUGS=set_drops_ttl: the room created with SET + EXPIRE, each post a plain SET, which
// clears the TTL -> no_ttl (the record shows the app setting one).

const path = require('path');
const crypto = require('crypto');
const express = require('express');
const Redis = require('ioredis');

const PORT = Number(process.env.PORT || 3000);
const HOST = '127.0.0.1';
const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const OPENAI_BASE_URL = (process.env.OPENAI_BASE_URL || 'https://api.openai.com/v1').replace(/\/+$/, '');
const OPENAI_API_KEY = process.env.OPENAI_API_KEY || '';
const MODEL = 'gpt-4o-mini';

const ROOM_TTL_SECONDS = 3 * 24 * 60 * 60; // 259200
const MAX_TX_ATTEMPTS = 5;
const MAX_TEXT_LENGTH = 8000;
const HISTORY_LIMIT = 40; // posts sent to the model as context
const MODEL_TIMEOUT_MS = 60000;

// Deliberate bugs, only when named in APP_BUGS (comma-separated).
const BUGS = new Set(
  (process.env.APP_BUGS || '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
);

// ---------------------------------------------------------------------------
// Redis
// ---------------------------------------------------------------------------

const redisOptions = {
  maxRetriesPerRequest: 2, // fail requests instead of queueing them forever
  connectTimeout: 5000,
};

// Shared connection for plain reads/writes.
const redis = new Redis(REDIS_URL, redisOptions);
redis.on('error', (err) => console.error('[redis]', err.message));

// WATCH state belongs to a connection, so each transaction needs a connection
// of its own. Keep a few idle duplicates around instead of reconnecting.
const idleConns = [];
const MAX_IDLE_CONNS = 8;

function acquireConn() {
  const conn = idleConns.pop();
  if (conn) return conn;
  const c = redis.duplicate();
  c.on('error', (err) => console.error('[redis tx]', err.message));
  return c;
}

function releaseConn(conn, healthy) {
  if (healthy && idleConns.length < MAX_IDLE_CONNS && conn.status === 'ready') {
    idleConns.push(conn);
  } else {
    conn.disconnect();
  }
}

class StoreError extends Error {}
class NotFound extends Error {}

const roomKey = (slug) => `room:${slug}`;

function newSlug() {
  return crypto.randomBytes(9).toString('base64url').toLowerCase().replace(/[^a-z0-9]/g, 'x');
}

function isValidSlug(slug) {
  return typeof slug === 'string' && /^[a-z0-9]{6,40}$/.test(slug);
}

function parseRoom(raw, slug) {
  if (raw == null) return null;
  try {
    const room = JSON.parse(raw);
    if (!room || !Array.isArray(room.posts)) throw new Error('bad shape');
    return room;
  } catch (err) {
    throw new StoreError(`room ${slug} is corrupt: ${err.message}`);
  }
}

async function store(op) {
  try {
    return await op();
  } catch (err) {
    if (err instanceof StoreError || err instanceof NotFound) throw err;
    throw new StoreError(err.message);
  }
}

async function createRoom() {
  const slug = newSlug();
  const room = { slug, created: new Date().toISOString(), posts: [] };
  const json = JSON.stringify(room);
  await store(async () => {
    if (BUGS.has('set_drops_ttl')) {
      // TTL handled once, when the room is created.
      await redis.set(roomKey(slug), json);
      await redis.expire(roomKey(slug), ROOM_TTL_SECONDS);
    } else {
      const ok = await redis.set(roomKey(slug), json, 'EX', ROOM_TTL_SECONDS, 'NX');
      if (ok !== 'OK') throw new StoreError('slug collision, try again');
    }
  });
  return room;
}

async function loadRoom(slug) {
  const raw = await store(() => redis.get(roomKey(slug)));
  return parseRoom(raw, slug);
}

// Read-modify-write of the whole room document, guarded by WATCH/MULTI/EXEC
// and retried when another writer got there first.
async function updateRoom(slug, mutate) {
  const key = roomKey(slug);
  const conn = acquireConn();
  let healthy = true;
  try {
    for (let attempt = 1; attempt <= MAX_TX_ATTEMPTS; attempt++) {
      await conn.watch(key);
      const room = parseRoom(await conn.get(key), slug);
      if (!room) {
        await conn.unwatch();
        throw new NotFound(slug);
      }
      const result = mutate(room);
      const json = JSON.stringify(room);
      const tx = conn.multi();
      if (BUGS.has('set_drops_ttl')) {
        tx.set(key, json);
      } else {
        tx.set(key, json, 'EX', ROOM_TTL_SECONDS);
      }
      const replies = await tx.exec();
      if (replies === null) {
        // Key changed between WATCH and EXEC: start over with fresh data.
        console.warn(`[store] write conflict on ${key}, attempt ${attempt}/${MAX_TX_ATTEMPTS}`);
        continue;
      }
      for (const [err] of replies) {
        if (err) throw err;
      }
      return result;
    }
    throw new StoreError(`too much contention on room ${slug}, gave up after ${MAX_TX_ATTEMPTS} attempts`);
  } catch (err) {
    healthy = false;
    if (err instanceof StoreError || err instanceof NotFound) throw err;
    throw new StoreError(err.message);
  } finally {
    if (!healthy) {
      try { await conn.unwatch(); } catch (_) { /* connection is going away anyway */ }
    }
    releaseConn(conn, healthy);
  }
}

// ---------------------------------------------------------------------------
// Model
// ---------------------------------------------------------------------------

class ModelError extends Error {}

const SYSTEM_PROMPT = 'You are a helpful assistant in a small chat app. Answer concisely.';

async function askModel(history, text) {
  const messages = [{ role: 'system', content: SYSTEM_PROMPT }];
  for (const p of history.slice(-HISTORY_LIMIT)) {
    messages.push({ role: p.by === 'assistant' ? 'assistant' : 'user', content: p.text });
  }
  messages.push({ role: 'user', content: text });

  let res;
  try {
    res = await fetch(`${OPENAI_BASE_URL}/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${OPENAI_API_KEY}`,
      },
      body: JSON.stringify({ model: MODEL, messages }),
      signal: AbortSignal.timeout(MODEL_TIMEOUT_MS),
    });
  } catch (err) {
    throw new ModelError(`model request failed: ${err.message}`);
  }
  if (!res.ok) {
    const body = await res.text().catch(() => '');
    throw new ModelError(`model answered ${res.status}: ${body.slice(0, 200)}`);
  }
  let data;
  try {
    data = await res.json();
  } catch (err) {
    throw new ModelError('model answered with invalid JSON');
  }
  const content = data && data.choices && data.choices[0] && data.choices[0].message
    ? data.choices[0].message.content
    : null;
  if (typeof content !== 'string') throw new ModelError('model answer had no message content');
  return content;
}

// ---------------------------------------------------------------------------
// HTTP
// ---------------------------------------------------------------------------

const app = express();
app.disable('x-powered-by');
app.use(express.json({ limit: '64kb' }));

app.get('/', (req, res) => {
  res.sendFile(path.join(__dirname, 'rooms.html'));
});

app.get('/healthz', (req, res) => res.json({ ok: true }));

app.post('/v1/rooms', async (req, res, next) => {
  try {
    const room = await createRoom();
    res.status(201).json({ room: { slug: room.slug } });
  } catch (err) {
    next(err);
  }
});

app.get('/v1/rooms/:slug', async (req, res, next) => {
  const { slug } = req.params;
  if (!isValidSlug(slug)) return res.status(404).json({ error: 'room not found' });
  try {
    const room = await loadRoom(slug);
    if (!room) return res.status(404).json({ error: 'room not found' });
    res.json({
      room: {
        slug: room.slug,
        posts: room.posts.map((p) => ({ by: p.by, text: p.text })),
      },
    });
  } catch (err) {
    next(err);
  }
});

app.post('/v1/rooms/:slug/posts', async (req, res, next) => {
  const { slug } = req.params;
  const text = req.body && typeof req.body.text === 'string' ? req.body.text.trim() : '';
  if (!text) return res.status(400).json({ error: 'text is required' });
  if (text.length > MAX_TEXT_LENGTH) return res.status(400).json({ error: 'text is too long' });
  if (!isValidSlug(slug)) return res.status(404).json({ error: 'room not found' });

  try {
    const room = await loadRoom(slug);
    if (!room) return res.status(404).json({ error: 'room not found' });

    const reply = await askModel(room.posts, text);
    const now = new Date().toISOString();
    const human = { by: 'human', text, at: now };
    const assistant = { by: 'assistant', text: reply, at: now };

    let n;
    if (BUGS.has('no_watch')) {
      // Append to the copy we read above and write it back.
      room.posts.push(human, assistant);
      n = room.posts.length - 1;
      await store(() =>
        BUGS.has('set_drops_ttl')
          ? redis.set(roomKey(slug), JSON.stringify(room))
          : redis.set(roomKey(slug), JSON.stringify(room), 'EX', ROOM_TTL_SECONDS)
      );
    } else {
      n = await updateRoom(slug, (fresh) => {
        fresh.posts.push(human, assistant);
        return fresh.posts.length - 1;
      });
    }

    res.json({ post: { text: reply, n } });
  } catch (err) {
    next(err);
  }
});

app.use((req, res) => res.status(404).json({ error: 'not found' }));

// eslint-disable-next-line no-unused-vars
app.use((err, req, res, next) => {
  if (err instanceof NotFound) return res.status(404).json({ error: 'room not found' });
  if (err instanceof StoreError) {
    console.error('[store]', err.message);
    return res.status(503).json({ error: 'storage unavailable, please retry' });
  }
  if (err instanceof ModelError) {
    console.error('[model]', err.message);
    return res.status(502).json({ error: 'the model did not answer, please retry' });
  }
  if (err.type === 'entity.parse.failed') return res.status(400).json({ error: 'invalid JSON body' });
  if (err.type === 'entity.too.large') return res.status(413).json({ error: 'body too large' });
  console.error('[error]', err);
  res.status(500).json({ error: 'internal error' });
});

const server = app.listen(PORT, HOST, () => {
  const bugs = BUGS.size ? ` (APP_BUGS=${[...BUGS].join(',')})` : '';
  console.log(`listening on http://${HOST}:${PORT}${bugs}`);
});

function shutdown() {
  server.close(() => {
    for (const c of idleConns) c.disconnect();
    redis.quit().finally(() => process.exit(0));
  });
  setTimeout(() => process.exit(0), 3000).unref();
}
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
