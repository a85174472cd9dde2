/*
 * A REST chat on Express and ioredis with no OpenAPI document and no cookie: a conversation is
 * made by a create call, and its id travels in the URL. A target for `lab investigate` shaped
 * unlike the Socket.IO and SSE apps beside it. Correct by default: both rows and the TTL go in
 * one MULTI, awaited before the answer.
 *
 *     REDIS_URL=redis://127.0.0.1:19521/0 PORT=19524 node examples/node/rest.js
 *
 * Listens on 127.0.0.1 only. Contract:
 *   POST /api/conversations -> 201 {"id": "<uuid>", "createdAt": "..."}
 *   POST /api/conversations/:id/messages {"content": "..."} -> 200 {"message": {"role": "assistant",
 *     "content": "..."}}; no content -> 400 JSON; an unknown conversation -> 404 JSON; Redis failing -> 503 JSON.
 *   GET /api/conversations/:id/messages -> [{"role": "user" | "assistant", "content": "..."}], oldest first.
 *   Storage: List conversation:{id}:messages (JSON rows), its TTL an hour renewed with each turn;
 *     conversation:{id}:meta (the create call's record, the same TTL).
 *
 * NODE_REST_STORE_ERRORS=warn (correct, another style): a failed save still answers 200 with the
 * reply, and says so beside it -- {"message": {...}, "warning": "not saved: storage unavailable"}
 * -- as an app that lets the user keep reading does; its page shows the warning.
 *
 * NODE_REST_BUGS=unawaited (a bug): the answer goes out before the MULTI has settled -- the
 * promise is left running ("the write is fast anyway"), so a refresh right after the answer can
 * come before the turn is in Redis, and a failed write goes unnoticed.
 */
"use strict";
const crypto = require("crypto");
const express = require("express");
const Redis = require("ioredis");

const BUGS = new Set((process.env.NODE_REST_BUGS || "").split(",").filter(Boolean));
const WARN_ON_STORE_ERROR = process.env.NODE_REST_STORE_ERRORS === "warn";
const TTL_S = 3600;
// autoResendUnfulfilledCommands off: ioredis' default re-sends, after a reconnect, a MULTI whose
// reply the broken connection lost -- Redis had run it, and the turn would be stored twice.
const redis = new Redis(process.env.REDIS_URL, {
  maxRetriesPerRequest: 1,
  connectTimeout: 3000,
  commandTimeout: 2000, // a command lost with its connection fails after this (not re-sent)
  autoResendUnfulfilledCommands: false,
});
redis.on("error", (e) => console.error("redis:", e.message));
const app = express();
app.use(express.json());
const rows = (id) => `conversation:${id}:messages`;
const meta = (id) => `conversation:${id}:meta`;

app.post("/api/conversations", async (req, res) => {
  const id = crypto.randomUUID();
  try {
    await redis.set(meta(id), JSON.stringify({ createdAt: Date.now() }), "EX", TTL_S);
  } catch (e) {
    return res.status(503).json({ error: "storage unavailable" });
  }
  res.status(201).json({ id, createdAt: new Date().toISOString() });
});

app.post("/api/conversations/:id/messages", async (req, res) => {
  const content = typeof req.body?.content === "string" ? req.body.content.trim() : "";
  if (!content) return res.status(400).json({ error: "content is required" });
  const id = req.params.id;
  try {
    if (!(await redis.exists(meta(id)))) return res.status(404).json({ error: "unknown conversation" });
  } catch (e) {
    return res.status(503).json({ error: "storage unavailable" });
  }
  const reply = `I read ${content.split(/\s+/).length} words.`;
  const saved = redis
    .multi()
    .rpush(rows(id), JSON.stringify({ role: "user", content }), JSON.stringify({ role: "assistant", content: reply }))
    .expire(rows(id), TTL_S)
    .expire(meta(id), TTL_S)
    .exec();
  if (BUGS.has("unawaited")) {
    saved.catch((e) => console.error("saving the turn failed:", e.message)); // nobody is told
  } else {
    try {
      await saved;
    } catch (e) {
      if (WARN_ON_STORE_ERROR) {
        return res.json({ message: { role: "assistant", content: reply }, warning: "not saved: storage unavailable" });
      }
      return res.status(503).json({ error: "storage unavailable" });
    }
  }
  res.json({ message: { role: "assistant", content: reply } });
});

app.get("/api/conversations/:id/messages", async (req, res) => {
  try {
    const stored = await redis.lrange(rows(req.params.id), 0, -1);
    res.set("Cache-Control", "no-store").json(stored.map((r) => JSON.parse(r)));
  } catch (e) {
    res.status(503).json({ error: "storage unavailable" });
  }
});

const server = app.listen(Number(process.env.PORT), "127.0.0.1");
// Shut down as a process manager asks: stop taking requests, then close the Redis connection.
async function shutdown() {
  server.close();
  const force = setTimeout(() => process.exit(1), 3000);
  force.unref();
  await redis.quit().catch(() => redis.disconnect());
  process.exit(0);
}
process.once("SIGTERM", shutdown);
process.once("SIGINT", shutdown);
