/*
 * A chat on Express and ioredis whose replies stream as Server-Sent Events, with a cookie
 * session and each conversation a Redis Hash: a target for `lab investigate` shaped unlike the
 * Socket.IO app beside it (examples/node/server.js). Correct by default: the user's row and the
 * reply's are stored (each in one MULTI with its TTL) before the first event goes out.
 *
 *     REDIS_URL=redis://127.0.0.1:19521/0 PORT=19523 node examples/node/sse.js
 *
 * Listens on 127.0.0.1 only. Contract:
 *   POST /chat {"message": "..."} -> 200 text/event-stream, its headers at once (as SSE servers
 *     flush them), the first event NODE_SSE_FIRST_TOKEN_MS on (the model's first token; 40 ms):
 *     `data: {"delta": "..."}` events NODE_SSE_DELTA_MS apart (15 ms), then `data: [DONE]`. The session is the cookie chat_sid (set on the first request,
 *     7 days). No message -> 400 JSON; Redis failing before the stream -> 503 JSON.
 *   GET /api/messages -> {"messages": [{"sender": "user" | "bot", "message": "..."}]}, oldest first.
 *   Storage: Hash chat:{sid}, one field per row (its number from INCR chat:{sid}:seq, zero-padded
 *     so fields sort in order), its TTL 24 h renewed with each row.
 *
 * NODE_SSE_BUGS (bugs, comma-separated):
 *   save_after_end      the reply is stored after the stream ended, and a failed write is only
 *                       logged -- the answer was already sent, so the user saw a reply that a
 *                       refresh in between (or a Redis error then) loses.
 *   save_if_delivered   the turn (the message and its reply) is stored once streamed, before its
 *                       last event, and only if the client is still there ("don't keep a turn
 *                       nobody read to its end"): a refresh or a closed tab mid-reply loses the
 *                       message the user sent and saw answered.
 *   save_before_close   the reply is stored after its [DONE] event and before the stream closes
 *                       ("the connection is still ours"): the page takes [DONE] for the end and
 *                       shows the reply whole, which a refresh then may not find.
 *   spawn_message       the user's message is stored by a promise nobody awaits ("the first token
 *                       must not wait on Redis"), its failure only logged; the reply is stored,
 *                       awaited, after the last delta and before [DONE] -- a failed write of the
 *                       message still ends in [DONE], and a refresh shows a reply to nothing.
 */
"use strict";
const crypto = require("crypto");
const express = require("express");
const Redis = require("ioredis");

const BUGS = new Set((process.env.NODE_SSE_BUGS || "").split(",").filter(Boolean));
const FIRST_TOKEN_MS = Number(process.env.NODE_SSE_FIRST_TOKEN_MS || 40);
const DELTA_MS = Number(process.env.NODE_SSE_DELTA_MS || 15); // between two events after the first
const redis = new Redis(process.env.REDIS_URL, { maxRetriesPerRequest: 1, connectTimeout: 3000, commandTimeout: 5000 });
redis.on("error", (e) => console.error("redis:", e.message));
const app = express();
app.use(express.json());

function session(req, res) {
  const m = /(?:^|;\s*)chat_sid=([a-f0-9]{24})/.exec(req.headers.cookie || "");
  if (m) return m[1];
  const sid = crypto.randomBytes(12).toString("hex");
  res.cookie("chat_sid", sid, { httpOnly: true, sameSite: "lax", maxAge: 7 * 24 * 3600 * 1000, path: "/" });
  return sid;
}

async function store(sid, sender, message) {
  const key = `chat:${sid}`;
  const n = await redis.incr(`${key}:seq`);
  await redis
    .multi()
    .hset(key, String(n).padStart(8, "0"), JSON.stringify({ sender, message }))
    .expire(key, 86400)
    .expire(`${key}:seq`, 86400)
    .exec();
}

app.post("/chat", async (req, res) => {
  const text = typeof req.body?.message === "string" ? req.body.message.trim() : "";
  if (!text) return res.status(400).json({ error: "message is required" });
  const sid = session(req, res);
  const reply = `You wrote ${text.length} characters.`;
  const atEnd = BUGS.has("save_if_delivered") || BUGS.has("spawn_message"); // the turn's rows after the deltas
  if (BUGS.has("spawn_message")) {
    store(sid, "user", text).catch((e) => console.error("saving the message failed:", e.message));
  }
  try {
    if (!atEnd) await store(sid, "user", text);
    if (!BUGS.has("save_after_end") && !BUGS.has("save_before_close") && !atEnd) await store(sid, "bot", reply);
  } catch (e) {
    return res.status(503).json({ error: "storage unavailable" });
  }
  res.setHeader("Content-Type", "text/event-stream");
  res.setHeader("Cache-Control", "no-store");
  res.flushHeaders();
  let left = false; // the client closed the connection before the reply's end
  res.on("close", () => (left = !res.writableFinished));
  await new Promise((r) => setTimeout(r, FIRST_TOKEN_MS)); // the model's first token
  for (const word of reply.split(" ")) {
    res.write(`data: ${JSON.stringify({ delta: word + " " })}\n\n`);
    await new Promise((r) => setTimeout(r, DELTA_MS));
  }
  if ((BUGS.has("save_if_delivered") && !left) || BUGS.has("spawn_message")) {
    try {
      if (!BUGS.has("spawn_message")) await store(sid, "user", text); // before the last event
      await store(sid, "bot", reply); // the answer ends once it is stored
    } catch (e) {
      return res.end(`data: ${JSON.stringify({ error: "storage unavailable" })}\n\n`);
    }
  }
  if (BUGS.has("save_before_close")) {
    res.write("data: [DONE]\n\n");
    try {
      await store(sid, "bot", reply);
    } catch (e) {
      console.error("saving the reply failed:", e.message);
    }
    return res.end();
  }
  res.end("data: [DONE]\n\n");
  if (BUGS.has("save_after_end")) {
    try {
      await store(sid, "bot", reply);
    } catch (e) {
      console.error("saving the reply failed:", e.message); // the answer is gone already
    }
  }
});

app.get("/api/messages", async (req, res) => {
  const sid = session(req, res);
  try {
    const all = await redis.hgetall(`chat:${sid}`);
    res.set("Cache-Control", "no-store").json({ messages: Object.keys(all).sort().map((k) => JSON.parse(all[k])) });
  } catch (e) {
    res.status(503).json({ error: "storage unavailable" });
  }
});

const server = app.listen(Number(process.env.PORT), "127.0.0.1");
for (const sig of ["SIGTERM", "SIGINT"]) {
  process.on(sig, () => {
    server.close();
    redis.quit().finally(() => process.exit(0));
    setTimeout(() => process.exit(0), 3000).unref();
  });
}
