'use strict';
// examples/node-prg.toml: a target for lab investigate (written without the lab; PRG_BUGS=swallow|expire_once).
// Post/redirect/get chat: the page is rendered by the server, the form does a
// plain POST and gets a 303 back to the conversation. No client-side JS.

const crypto = require('node:crypto');
const path = require('node:path');
const express = require('express');
const Redis = require('ioredis');

const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379/0';
const PORT = Number(process.env.PORT || 3000);
// PRG_ANSWER=render: a message's POST answered by the conversation's page itself (200), not a
// 303 back to it; unset, post/redirect/get.
const ANSWER = process.env.PRG_ANSWER || 'redirect';
const BUGS = new Set((process.env.PRG_BUGS || '').split(',').map((s) => s.trim()).filter(Boolean));
const CONV_TTL = 30 * 60; // seconds
const ID_RE = /^[a-f0-9]{16}$/;

const CANNED = [
  'Good question. The short answer is: it depends on your setup.',
  "I'd start by checking the logs, that usually tells you most of it.",
  'Sure! Could you give me a bit more detail about what you tried?',
  'That sounds right to me. Let me know if anything breaks.',
  'Hmm, I am not sure. Try restarting it and see if it happens again.',
  'Thanks for asking! Most people run into that at some point.',
];

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Fake "model": waits a bit, then picks a canned reply from the hash of the text.
async function fakeModel(text) {
  await sleep(50 + Math.random() * 100);
  const digest = crypto.createHash('sha1').update(text.trim().toLowerCase()).digest();
  return CANNED[digest[0] % CANNED.length];
}

const redis = new Redis(REDIS_URL, {
  maxRetriesPerRequest: 1, // fail fast instead of hanging the request when Redis is down
  connectTimeout: 2000,
  commandTimeout: 2000,
});
redis.on('error', (err) => console.error('[redis]', err.message));

const convKey = (id) => `conv:${id}`;

async function appendMessage(id, who, text) {
  const key = convKey(id);
  const n = await redis.hincrby(key, 'seq', 1);
  await redis.hset(key, String(n), JSON.stringify({ who, text, at: new Date().toISOString() }));
  return n;
}

async function saveTurn(id, userText, botText) {
  const first = await appendMessage(id, 'you', userText);
  await appendMessage(id, 'assistant', botText);
  if (!BUGS.has('expire_once') || first === 1) {
    await redis.expire(convKey(id), CONV_TTL);
  }
}

async function loadConversation(id) {
  const fields = await redis.hgetall(convKey(id));
  return Object.keys(fields)
    .filter((k) => /^\d+$/.test(k))
    .sort((a, b) => Number(a) - Number(b))
    .map((k) => {
      try {
        return JSON.parse(fields[k]);
      } catch {
        return null;
      }
    })
    .filter(Boolean);
}

const app = express();
app.set('view engine', 'ejs');
app.set('views', path.join(__dirname, 'prg-views'));
app.disable('x-powered-by');
app.use('/static', express.static(path.join(__dirname, 'prg-public')));
app.use(express.urlencoded({ extended: false, limit: '32kb' }));

app.param('id', (req, res, next, id) => {
  if (!ID_RE.test(id)) return res.status(404).render('error', { message: 'No such conversation.', back: '/' });
  next();
});

app.get('/', (req, res) => {
  const id = crypto.randomBytes(8).toString('hex');
  res.redirect(303, `/c/${id}`);
});

app.get('/c/:id', async (req, res) => {
  const messages = await loadConversation(req.params.id);
  res.render('conversation', { id: req.params.id, messages });
});

app.post('/c/:id/say', async (req, res) => {
  const { id } = req.params;
  const text = String(req.body.text || '').trim();
  if (!text) return res.redirect(303, `/c/${id}`);

  const reply = await fakeModel(text);
  try {
    await saveTurn(id, text, reply);
  } catch (err) {
    if (!BUGS.has('swallow')) throw err;
    console.error(`[save] conv ${id}: ${err.message} (ignored)`);
  }
  if (ANSWER === 'render') {
    // The conversation rendered as the POST's own answer (no redirect): the style of many
    // older form apps; a reload of it asks the browser to post the form again.
    return res.render('conversation', { id, messages: await loadConversation(id) });
  }
  res.redirect(303, `/c/${id}`);
});

// Express 5 forwards rejected promises from async handlers here.
app.use((err, req, res, next) => {
  console.error(`[error] ${req.method} ${req.originalUrl}:`, err.message);
  if (res.headersSent) return next(err);
  const conv = /^\/c\/([a-f0-9]{16})/.exec(req.originalUrl);
  res.status(500).render('error', {
    message: req.method === 'POST'
      ? 'Something went wrong, your message was not saved. Please try again.'
      : 'The conversation could not be loaded right now. Please try again.',
    back: conv ? `/c/${conv[1]}` : '/',
  });
});

if (BUGS.size) console.warn(`PRG_BUGS enabled: ${[...BUGS].sort().join(', ')}`);
app.listen(PORT, '127.0.0.1', () => console.log(`prg_chat listening on http://127.0.0.1:${PORT}`));
