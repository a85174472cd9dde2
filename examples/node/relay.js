/*
 * A chat whose reply is not the answer to the message's POST: the page POSTs the message, is
 * answered 202 with a turn id, and then opens an EventSource on that turn to read the reply as
 * it is generated -- the two-step shape of apps that queue the model call (a job, a relay) and
 * stream it on a GET. Express with the official `redis` client (node-redis, not ioredis), a
 * thread id the page mints (crypto.randomUUID(), kept in localStorage) and sends in the body,
 * each thread a Redis List of JSON rows. Correct by default: the message is stored (awaited)
 * before the 202; the reply is stored (awaited) before the stream's `event: end`.
 *
 *     REDIS_URL=redis://127.0.0.1:6379/0 PORT=8080 node examples/node/relay.js
 *
 * Listens on 127.0.0.1 only. Contract:
 *   GET /                         the page (no cookie: the thread id is the page's own)
 *   POST /api/turns {"thread": "<uuid>", "prompt": "..."} -> 202 {"turn": "<hex>"}
 *     No thread or no prompt -> 422 JSON; Redis failing -> 503 JSON.
 *   GET /api/turns/<turn>/events  text/event-stream: `event: token` / `data: {"t": "..."}` events
 *     RELAY_TOKEN_MS apart (25 ms), then `event: end` / `data: {}`. An unknown turn -> 404.
 *   GET /api/threads/<thread> -> {"thread": ..., "log": [{"by": "me" | "assistant", "text": ...}]},
 *     oldest first.
 *   Storage: List relay:thread:<thread>, one JSON row each (RPUSH), its TTL 12 h renewed in the
 *     same MULTI as each row.
 *
 * RELAY_REPLY=poll: no stream -- the job makes the reply as soon as the message is taken and the
 *   page polls the thread until it shows (examples/node-relay-poll.toml: [chat] reply_from).
 *
 * RELAY_BUGS (comma-separated):
 *   reply_after_end   the reply is stored after `event: end` went out, its failure only logged
 *                     ("the user has the reply; the store can catch up"): a refresh right after
 *                     the reply ended may miss it, and a refused write loses a reply the user saw.
 *   message_after_202 the message is stored by a promise nobody awaits, its failure only logged:
 *                     the 202 goes out at once, and a refused write loses a message the user then
 *                     saw answered (the job's reply is stored all the same).
 */
"use strict";
const crypto = require("crypto");
const express = require("express");
const { createClient } = require("redis");

const BUGS = new Set((process.env.RELAY_BUGS || "").split(",").filter(Boolean));
const TOKEN_MS = Number(process.env.RELAY_TOKEN_MS || 25);
const TTL_S = 12 * 3600;
// RELAY_REPLY=poll: no stream -- the reply is made by the job as soon as the message is taken, and
// the page polls the thread until it shows (a queue worker's shape). Correct: nothing the user
// saw is unstored; the reply's row lands after the 202, which never claimed it.
const POLLED = process.env.RELAY_REPLY === "poll";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const redis = createClient({
  url: process.env.REDIS_URL,
  socket: { connectTimeout: 3000, reconnectStrategy: (n) => Math.min(50 * n, 500) },
  disableOfflineQueue: true, // a command while Redis is unreachable fails now, not later
});
redis.on("error", (e) => console.error("redis:", e.message));

const pending = new Map(); // turn id -> {thread, prompt}: the model's job, kept until streamed

async function append(thread, by, text) {
  const key = `relay:thread:${thread}`;
  await redis.multi().rPush(key, JSON.stringify({ by, text })).expire(key, TTL_S).exec();
}

// The stand-in model: a reply of its own words, one token at a time.
function words(prompt) {
  const n = prompt.trim().split(/\s+/).length;
  return `I read ${n} word${n === 1 ? "" : "s"} and I am answering now.`.split(" ");
}

const app = express();
app.use(express.json());

app.get("/", (req, res) => res.sendFile(__dirname + "/relay.html"));

app.post("/api/turns", async (req, res) => {
  const { thread, prompt } = req.body || {};
  if (typeof thread !== "string" || !UUID.test(thread) || typeof prompt !== "string" || !prompt.trim()) {
    return res.status(422).json({ error: "thread (a UUID) and prompt (text) are required" });
  }
  if (BUGS.has("message_after_202")) {
    // "The 202 must not wait on Redis": the message stored by a promise nobody awaits.
    append(thread, "me", prompt).catch((e) => console.error("message not stored:", e.message));
  } else {
    try {
      await append(thread, "me", prompt);
    } catch (e) {
      return res.status(503).json({ error: `store unavailable: ${e.message}` });
    }
  }
  const turn = crypto.randomBytes(8).toString("hex");
  if (POLLED) {
    // The job runs whether or not anyone streams it; the page polls the thread for the reply.
    res.status(202).json({ turn, poll: true });
    return generate(prompt, () => false, () => {}).then((reply) =>
      append(thread, "assistant", reply).catch((e) => console.error("reply not stored:", e.message)),
    );
  }
  pending.set(turn, { thread, prompt });
  res.status(202).json({ turn });
});

// The stand-in model's tokens, TOKEN_MS apart, each handed to `token`; null where `gone()`.
async function generate(prompt, gone, token) {
  const out = [];
  for (const w of words(prompt)) {
    await new Promise((r) => setTimeout(r, TOKEN_MS));
    if (gone()) return null;
    out.push(w);
    token(w);
  }
  return out.join(" ");
}

app.get("/api/turns/:turn/events", async (req, res) => {
  const job = pending.get(req.params.turn);
  if (!job) return res.status(404).json({ error: "no such turn" });
  pending.delete(req.params.turn);
  res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-store", Connection: "keep-alive" });
  let gone = false;
  req.on("close", () => (gone = true));
  const reply = await generate(job.prompt, () => gone, (w) =>
    res.write(`event: token\ndata: ${JSON.stringify({ t: w + " " })}\n\n`),
  );
  if (reply === null) return; // the page left: the turn's reply is never made
  if (!BUGS.has("reply_after_end")) {
    try {
      await append(job.thread, "assistant", reply);
    } catch (e) {
      res.write(`event: failed\ndata: ${JSON.stringify({ error: e.message })}\n\n`);
      return res.end();
    }
  }
  res.write("event: end\ndata: {}\n\n");
  res.end();
  if (BUGS.has("reply_after_end")) {
    append(job.thread, "assistant", reply).catch((e) => console.error("reply not stored:", e.message));
  }
});

app.get("/api/threads/:thread", async (req, res) => {
  try {
    const rows = await redis.lRange(`relay:thread:${req.params.thread}`, 0, -1);
    res.json({ thread: req.params.thread, log: rows.map((r) => JSON.parse(r)) });
  } catch (e) {
    res.status(503).json({ error: `store unavailable: ${e.message}` });
  }
});

redis.connect().then(() => {
  const server = app.listen(Number(process.env.PORT || 8080), "127.0.0.1", () =>
    console.log(`relay on http://127.0.0.1:${server.address().port}`),
  );
  for (const sig of ["SIGTERM", "SIGINT"]) process.on(sig, () => server.close(() => redis.quit().finally(() => process.exit(0))));
});
