// A chat on the Vercel AI SDK, as its docs persist one: streamText with @ai-sdk/openai (the
// Responses API, OPENAI_BASE_URL and OPENAI_API_KEY from the environment), the answer piped to
// the page as a text stream, and each message a UIMessage-like object with `parts`, one list
// row each (node-redis RPUSH + EXPIRE in a MULTI), the reply saved in streamText's onFinish. Plain node:http, no
// framework; the conversation's id is in the path (/api/chats/<id>/...).
//
//   REDIS_URL=redis://127.0.0.1:16380/0 OPENAI_BASE_URL=http://127.0.0.1:18411/v1 OPENAI_API_KEY=x \
//   PORT=18198 node examples/node-ai/server.js
//
// Correct by default: the user's message is saved before the model is called; the model's stream
// is read to its end whether or not the page is still there (as result.consumeStream() does), so
// onFinish saves the reply; the answer ends only after that save, and only if the reply is whole.
//
// AI_APP_BUGS=save_at_stream_end: the common first version -- the user's message and the reply
// saved together in onFinish, the answer piped with pipeTextStreamToResponse and no
// consumeStream: a page that goes away mid-answer cancels the stream, onFinish never runs, and
// the turn is gone after the refresh -> saved_at_stream_end (and a model error loses the
// message: lost_after_model_error).

import http from "node:http";
import { randomUUID } from "node:crypto";
import { createClient } from "redis";
import { streamText } from "ai";
import { openai } from "@ai-sdk/openai";

const KNOWN_BUGS = ["save_at_stream_end"];
const BUGS = new Set((process.env.AI_APP_BUGS || "").split(",").map((b) => b.trim()).filter(Boolean));
const unknown = [...BUGS].filter((b) => !KNOWN_BUGS.includes(b));
if (unknown.length) {
  console.error(`AI_APP_BUGS: unknown ${unknown.join(", ")}; known: ${KNOWN_BUGS.join(", ")}`);
  process.exit(2);
}
const TTL_S = Number(process.env.AI_APP_TTL_S || 86400);
const MODEL = process.env.AI_APP_MODEL || "gpt-4o-mini";
const ID = /^[A-Za-z0-9_-]{8,64}$/;
// A stream the SDK ended without onFinish or onError (a cut one, measured): how long to wait.
const SETTLE_MS = 3000;

// A model stream cut part-way throws inside the SDK's own stream, outside any await of ours
// (measured with ai 7.0.173 and 5.0.277 on Node 20): logged, not a crash of every chat.
for (const event of ["unhandledRejection", "uncaughtException"]) {
  process.on(event, (err) => console.error(`${event}: ${err?.message || err}`));
}

const redis = createClient({ url: process.env.REDIS_URL });
redis.on("error", (err) => console.error(`redis: ${err.message}`));
await redis.connect();

const key = (id) => `ai:chat:${id}`;
const load = async (id) => (await redis.lRange(key(id), 0, -1)).map((raw) => JSON.parse(raw));
// Each message its own row, appended with the TTL renewed in one MULTI: two tabs' turns both kept.
const save = (id, ...messages) =>
  redis.multi().rPush(key(id), messages.map((m) => JSON.stringify(m))).expire(key(id), TTL_S).exec();
const uiMessage = (role, text) => ({ id: randomUUID(), role, parts: [{ type: "text", text }] });
const textOf = (m) => m.parts.filter((p) => p.type === "text").map((p) => p.text).join("");

function json(res, status, body) {
  res.writeHead(status, { "Content-Type": "application/json" });
  res.end(JSON.stringify(body));
}

async function readJson(req) {
  let raw = "";
  for await (const chunk of req) raw += chunk;
  try {
    return JSON.parse(raw);
  } catch {
    return null;
  }
}

async function chat(req, res, id) {
  const body = await readJson(req);
  const text = body && typeof body.text === "string" ? body.text.trim() : "";
  if (!text) return json(res, 400, { error: 'send {"text": "..."}' });
  const past = await load(id);
  const user = uiMessage("user", body.text);
  const firstVersion = BUGS.has("save_at_stream_end");
  if (!firstVersion) await save(id, user);
  let settle;
  const settled = new Promise((resolve) => (settle = resolve));
  const result = streamText({
    model: openai(MODEL),
    system: "You are a friendly assistant.",
    messages: [...past, user].map((m) => ({ role: m.role, content: textOf(m) })),
    onFinish: async ({ text: reply, finishReason }) => {
      if (finishReason !== "error") {
        const assistant = uiMessage("assistant", reply);
        await (firstVersion ? save(id, user, assistant) : save(id, assistant));
      }
      settle(finishReason);
    },
    onError: ({ error }) => {
      console.error(`model: ${error.message || error}`);
      settle("error");
    },
  });
  if (firstVersion) return result.pipeTextStreamToResponse(res); // the docs' first version
  // The stream read here to its end whether or not the page is still there (so onFinish saves
  // the reply), and the answer ended only once the SDK says the reply is whole: a text stream
  // cannot carry an error, so a broken one is broken off, never ended as if whole.
  res.writeHead(200, { "Content-Type": "text/plain; charset=utf-8" });
  res.flushHeaders(); // on the wire: a connection broken off later is no empty answer to retry
  for await (const delta of result.textStream) res.write(delta);
  const why = await Promise.race([settled, new Promise((r) => setTimeout(() => r("no finish"), SETTLE_MS))]);
  if (why === "stop") res.end();
  else res.destroy();
}

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, "http://x");
  const m = url.pathname.match(/^\/api\/chats\/([^/]+)(\/messages)?$/);
  try {
    if (url.pathname === "/health") return json(res, 200, { ok: true });
    if (!m) return json(res, 404, { error: `no route ${req.method} ${url.pathname}` });
    if (!ID.test(m[1])) return json(res, 400, { error: "the chat id must be 8-64 letters, digits, - or _" });
    if (req.method === "POST" && m[2]) return await chat(req, res, m[1]);
    if (req.method === "GET" && !m[2]) return json(res, 200, { id: m[1], messages: await load(m[1]) });
    return json(res, 405, { error: `${req.method} not allowed here` });
  } catch (err) {
    console.error(err);
    if (!res.headersSent) json(res, 500, { error: String(err.message || err) });
    else res.destroy();
  }
});
server.listen(Number(process.env.PORT || 18198), "127.0.0.1", () => console.log(`listening on ${process.env.PORT}`));
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => server.close(() => redis.quit().finally(() => process.exit(0))));
