/*
 * A Socket.IO chat on Express and ioredis: a target for `lab investigate` written the way a
 * Node team would, with streamed replies over Socket.IO instead of an HTTP answer. Correct by
 * default (each row appended and its TTL renewed in one awaited MULTI, the reply generated
 * whether or not the socket is still there), so `lab investigate` should find nothing.
 *
 *     REDIS_URL=redis://127.0.0.1:19521/0 PORT=19522 node examples/node/server.js
 *
 * Listens on 127.0.0.1 only. Contract:
 *   Socket.IO at the default path /socket.io/, client bundle served (/socket.io/socket.io.js),
 *   polling and websocket both allowed. The client emits "chat" {conversation_id, text}:
 *     text: a non-empty string of at most 4000 characters; conversation_id: null/absent (the
 *     server mints one, crypto.randomUUID() without dashes) or 32 hex characters. Anything else
 *     -> "chat_error" {detail} and nothing is stored.
 *   The server stores the user's row, emits "ack" {conversation_id}, "generates" the reply
 *   "Echo: " + text as 4 "token" {text} events 30 ms apart (a stand-in for an LLM's tokens),
 *   stores the assistant's row and emits "done" {reply}. A failed store emits "chat_error"
 *   {detail: "storage unavailable"} instead of that turn's ack (or done). Several chats may be
 *   sent on one socket; they are handled concurrently.
 *   Storage: Redis list chat:{id}, oldest first, each row JSON {"role": "user"|"assistant",
 *   "content"}, appended with MULTI RPUSH + EXPIRE 604800 (7 days).
 *   GET /api/history, header X-Conversation-Id: <id> -> 200 {"messages": [{role, content}...]}
 *     oldest first; no (or an empty) header or an unknown id -> 200 {"messages": []}; not 32 hex
 *     -> 400 {detail}; Redis failing -> 503 {"detail": "storage unavailable"}. Not cacheable
 *     (Cache-Control: no-store, no ETag), so every read is a real read.
 *   GET /health -> 200 {"ok": true}. Anything else -> 404 JSON; errors are JSON, never HTML.
 *   Redis unreachable or stalled: a command fails within a few seconds (connect 3 s, command
 *   5 s, one retry), never hangs; connection errors are logged, never fatal.
 *   SIGTERM/SIGINT: close Socket.IO, the HTTP server and Redis, exit 0 (3 s hard deadline).
 *
 * NODE_BUGS (comma-separated; empty = correct) switches on real-world mistakes:
 *   read_modify_write  the conversation kept as one JSON document ({"messages": [...]}) in the
 *                string key chat:{id}, handled as a handler that loads the conversation, adds to
 *                it and saves it does: a turn GETs the document once when it starts (or starts
 *                empty), pushes the user's row and SETs it back with EX 604800, streams the
 *                reply, then pushes the reply onto that same copy and SETs it again -- no WATCH,
 *                no Lua, no artificial delay. Two tabs whose turns overlap each save a copy that
 *                lacks the other's rows; both tabs got "done" -> lost_update. (Loading for every
 *                row instead left a window of one Redis round trip, which two tabs met in 1 to 6
 *                of 6 trials depending on the machine's speed.) The history route reads the
 *                document (GET + parse).
 *   resend_unfulfilled  ioredis' default autoResendUnfulfilledCommands: after a connection drop,
 *                the commands whose replies were lost are sent again on the new connection, so
 *                an applied MULTI RPUSH + EXPIRE is applied twice -> duplicates_after_drop (in
 *                the trials whose one-shot reset lands on a write's reply)
 *   rewrite_history  every store rewrites the whole conversation: LRANGE it, DEL the key, then
 *                RPUSH every row back one awaited command at a time (the old rows, then the new
 *                one) and EXPIRE -- as a "save(messages)" that replaces the stored list does. Nothing
 *                is lost in the end, but between the DEL and the last RPUSH the earlier,
 *                acknowledged turns are missing from Redis: a refresh then shows a partial
 *                history, a crash then loses them -> rewrite_window
 *   floating_reply  "done" emitted with the reply, then the reply's store started and never
 *                awaited, its rejection caught by a .catch that logs it: the user has the whole
 *                reply, which Redis may never get -> acked_write_refused (write_refused at=answer)
 *
 * NODE_REWRITE_PIPELINE=1 (with rewrite_history): the DEL, the RPUSHes and the EXPIRE sent as one
 * ioredis pipeline (no MULTI) -- Redis runs a pipeline that arrives in one read back to back, so
 * no read falls between them: not the incident's window, and the lab draws nothing from it
 */
'use strict';

const crypto = require('node:crypto');
const http = require('node:http');
const express = require('express');
const { Server } = require('socket.io');
const Redis = require('ioredis');

const KNOWN_BUGS = new Set(['read_modify_write', 'resend_unfulfilled', 'rewrite_history', 'floating_reply']);
const REWRITE_PIPELINE = process.env.NODE_REWRITE_PIPELINE === '1';
const BUGS = new Set((process.env.NODE_BUGS || '').split(',').map((b) => b.trim()).filter(Boolean));
const unknown = [...BUGS].filter((b) => !KNOWN_BUGS.has(b));
if (unknown.length) {
  console.error(`NODE_BUGS: unknown ${JSON.stringify(unknown)}; known: ${JSON.stringify([...KNOWN_BUGS])}`);
  process.exit(2);
}
for (const name of ['REDIS_URL', 'PORT']) {
  if (!process.env[name]) {
    console.error(`${name} is required (e.g. REDIS_URL=redis://127.0.0.1:19521/0 PORT=19522)`);
    process.exit(2);
  }
}

const TTL_S = 7 * 24 * 3600;
const MAX_TEXT = 4000;
const TOKEN_MS = 30;
const ID_RE = /^[0-9a-fA-F]{32}$/;
const STORAGE_DOWN = 'storage unavailable';

// The offline queue stays on (ioredis' default): a command sent while reconnecting waits for the
// connection, but commandTimeout bounds that wait (and a stalled server's reply), and
// maxRetriesPerRequest: 1 fails queued commands after one reconnect attempt.
// autoResendUnfulfilledCommands off: ioredis' default re-sends, after a reconnect, every command
// whose reply the dropped connection lost -- an RPUSH that was applied is applied again (the
// lab found this in this app: a turn stored twice after a one-shot reset; bug resend_unfulfilled).
const redis = new Redis(process.env.REDIS_URL, {
  maxRetriesPerRequest: 1,
  enableOfflineQueue: true,
  autoResendUnfulfilledCommands: BUGS.has('resend_unfulfilled'),
  connectTimeout: 3000,
  commandTimeout: 5000,
});
let lastRedisError = '';
redis.on('error', (err) => {
  const line = `redis: ${err.code || err.name}: ${err.message}`;
  if (line !== lastRedisError) console.error(line); // one line per distinct error, not per retry
  lastRedisError = line;
});
redis.on('ready', () => { lastRedisError = ''; });

const key = (id) => `chat:${id}`;

// `turn` is the turn's own state: read_modify_write keeps the turn's copy of the document there.
async function appendRow(id, row, turn) {
  if (BUGS.has('read_modify_write')) {
    if (!turn.doc) {
      const raw = await redis.get(key(id));
      turn.doc = raw ? JSON.parse(raw) : { messages: [] };
    }
    turn.doc.messages.push(row);
    await redis.set(key(id), JSON.stringify(turn.doc), 'EX', TTL_S);
    return;
  }
  if (BUGS.has('rewrite_history')) {
    const rows = await redis.lrange(key(id), 0, -1);
    if (REWRITE_PIPELINE) {
      // The same commands as one pipeline (no MULTI): Redis runs them back to back.
      const p = redis.pipeline().del(key(id));
      for (const r of [...rows, JSON.stringify(row)]) p.rpush(key(id), r);
      const results = await p.expire(key(id), TTL_S).exec();
      for (const [err] of results) if (err) throw err;
      return;
    }
    await redis.del(key(id));
    for (const r of [...rows, JSON.stringify(row)]) await redis.rpush(key(id), r);
    await redis.expire(key(id), TTL_S);
    return;
  }
  const results = await redis.multi().rpush(key(id), JSON.stringify(row)).expire(key(id), TTL_S).exec();
  if (!results) throw new Error('MULTI aborted');
  for (const [err] of results) if (err) throw err;
}

async function readRows(id) {
  if (BUGS.has('read_modify_write')) {
    const raw = await redis.get(key(id));
    return raw ? JSON.parse(raw).messages : [];
  }
  return (await redis.lrange(key(id), 0, -1)).map((row) => JSON.parse(row));
}

function chatProblem(payload) {
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) {
    return 'payload must be an object {"conversation_id": string | null, "text": string}';
  }
  const { conversation_id: id, text } = payload;
  if (typeof text !== 'string' || text.length === 0) return 'text must be a non-empty string';
  if (text.length > MAX_TEXT) return `text must be at most ${MAX_TEXT} characters`;
  if (id !== undefined && id !== null && !(typeof id === 'string' && ID_RE.test(id))) {
    return 'conversation_id must be null or 32 hex characters';
  }
  return null;
}

function fourPieces(text) {
  const chars = Array.from(text); // by code point, so no piece ends in half a surrogate pair
  const cut = (i) => Math.floor((i * chars.length) / 4); // "Echo: x" has 7: no piece is empty
  return [0, 1, 2, 3].map((i) => chars.slice(cut(i), cut(i + 1)).join(''));
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Emitting on a socket that has gone away is a no-op, so a turn runs to the end (and stores the
// whole reply) whether or not its client is still listening.
async function handleChat(socket, payload) {
  const problem = chatProblem(payload);
  if (problem) return socket.emit('chat_error', { detail: problem });
  const id = payload.conversation_id ?? crypto.randomUUID().replaceAll('-', '');
  const turn = {};
  try {
    await appendRow(id, { role: 'user', content: payload.text }, turn);
  } catch (err) {
    console.error(`chat ${id}: storing the user's row failed: ${err.message}`);
    return socket.emit('chat_error', { detail: STORAGE_DOWN });
  }
  socket.emit('ack', { conversation_id: id });
  const reply = 'Echo: ' + payload.text;
  for (const piece of fourPieces(reply)) {
    await sleep(TOKEN_MS);
    socket.emit('token', { text: piece });
  }
  if (BUGS.has('floating_reply')) {
    socket.emit('done', { reply });
    appendRow(id, { role: 'assistant', content: reply }, turn).catch((err) => console.error(`chat ${id}: ${err.message}`));
    return;
  }
  try {
    await appendRow(id, { role: 'assistant', content: reply }, turn);
  } catch (err) {
    console.error(`chat ${id}: storing the reply failed: ${err.message}`);
    return socket.emit('chat_error', { detail: STORAGE_DOWN });
  }
  socket.emit('done', { reply });
}

const app = express();
app.disable('x-powered-by');
app.set('etag', false);

app.get('/health', (req, res) => res.json({ ok: true }));

app.get('/api/history', async (req, res) => {
  res.set('Cache-Control', 'no-store');
  const id = req.get('X-Conversation-Id');
  if (!id) return res.json({ messages: [] });
  if (!ID_RE.test(id)) return res.status(400).json({ detail: 'X-Conversation-Id must be 32 hex characters' });
  let messages;
  try {
    messages = await readRows(id);
  } catch (err) {
    console.error(`history ${id}: ${err.message}`);
    return res.status(503).json({ detail: STORAGE_DOWN });
  }
  res.json({ messages });
});

app.use((req, res) => res.status(404).json({ detail: `no route for ${req.method} ${req.path}` }));

// Replaces Express's HTML error page (a malformed URL, a handler that throws, ...).
// eslint-disable-next-line no-unused-vars
app.use((err, req, res, next) => {
  const status = Number.isInteger(err.status) && err.status >= 400 && err.status < 600 ? err.status : 500;
  if (status >= 500) console.error(`${req.method} ${req.originalUrl}: ${err.stack || err}`);
  if (res.headersSent) return res.end();
  res.status(status).json({ detail: status >= 500 ? 'internal error' : err.message });
});

const server = http.createServer(app);
const io = new Server(server); // path /socket.io/, serveClient on, polling + websocket

io.on('connection', (socket) => {
  socket.on('chat', (payload) => {
    handleChat(socket, payload).catch((err) => console.error(`chat: ${err.stack || err}`));
  });
});

server.listen(Number(process.env.PORT), '127.0.0.1', () => {
  const bugs = BUGS.size ? [...BUGS].join(',') : 'none';
  console.log(`node chat on http://127.0.0.1:${process.env.PORT} (redis ${process.env.REDIS_URL}, bugs: ${bugs})`);
});

let stopping = false;
function shutdown(signal) {
  if (stopping) return;
  stopping = true;
  console.log(`${signal}: shutting down`);
  setTimeout(() => { console.error('shutdown deadline (3 s) passed; exiting'); process.exit(0); }, 3000).unref();
  io.close(() => { // disconnects the sockets and closes the HTTP server
    redis.quit().catch(() => redis.disconnect()).finally(() => process.exit(0));
  });
  server.closeAllConnections(); // idle keep-alive HTTP connections would hold server.close open
}
process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));
