"""A chat on Tornado that saves its reply as it streams: the shape of apps that let a refresh in
the middle of a reply show what has arrived so far (a resumable stream).

    REDIS_URL=redis://127.0.0.1:16380/0 PORT=18243 python examples/tornado_progressive.py

- POST /api/conversations: 201 {"conversation": {"id": ...}} (a url-safe token, `-` and `_` in it).
- POST /api/conversations/<id>/messages {"content": "..."}: an NDJSON stream --
  {"type": "start", "message_id": n}, {"type": "delta", "content": "..."} per token,
  {"type": "done", "message_id": n} last.
- GET /api/conversations/<id>/messages: {"data": [{"id", "role", "content", "state"}]}, oldest
  first; `state` is "complete", "streaming" (a reply still being written) or "interrupted".

The conversation is one Redis List (``chat/<id>``); a message is an element, and the reply's
element is replaced (LSET) every few tokens while it streams, so a read in the middle shows a
prefix of the reply. Each write renews the TTL in the same transaction.
PROGRESSIVE_STORE=deltas keeps it as a Redis Stream of events instead (the shape of resumable
streams): a message, then the reply's words as deltas of a few tokens each, then its state; a
read folds them, so no single write holds a whole reply.

A browser that leaves mid-reply (PROGRESSIVE_ON_CUT):
- "finish" (default): the reply is written to its end anyway; a refresh shows it whole.
- "mark": the reply stops where it was and is kept with state "interrupted".

PROGRESSIVE_BUGS (comma-separated):
- rollback_on_cut: a browser that leaves mid-reply takes its turn with it -- both the question and
  the partial reply are removed (the turn is "not finished", so it is undone).
- final_unawaited: the reply's last write (its whole text) is left to a task nobody awaits; the
  done line goes first, and a refused write leaves the reply cut short in the store.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
from collections.abc import Callable
from typing import Any

import redis.asyncio as aioredis
import tornado.iostream
import tornado.web

TTL_S = 7 * 24 * 3600
TOKEN_GAP_S = 0.03
SAVE_EVERY = 4  # tokens between two saves of the reply so far
BUGS = set(filter(None, os.environ.get("PROGRESSIVE_BUGS", "").split(",")))
ON_CUT = os.environ.get("PROGRESSIVE_ON_CUT", "finish")
R = aioredis.from_url(os.environ["REDIS_URL"], socket_timeout=5, socket_connect_timeout=3, retry=None)
_tasks: set[asyncio.Task[object]] = set()

PAGE = """<!doctype html><meta charset=utf-8><title>Progressive chat</title>
<ol id=log></ol><form id=f><input id=q autocomplete=off><button>Send</button></form>
<script>
let cid = sessionStorage.getItem('conversation');
const log = document.getElementById('log');
function row(m) { const li = document.createElement('li'); li.className = m.role;
  li.textContent = m.content; log.append(li); return li; }
async function start() {
  if (!cid) { const r = await fetch('/api/conversations', {method: 'POST'});
    cid = (await r.json()).conversation.id; sessionStorage.setItem('conversation', cid); }
  const r = await fetch(`/api/conversations/${cid}/messages`);
  (await r.json()).data.forEach(row);
}
document.getElementById('f').onsubmit = async (e) => {
  e.preventDefault(); const q = document.getElementById('q'); const content = q.value; q.value = '';
  row({role: 'user', content}); const li = row({role: 'assistant', content: ''});
  const r = await fetch(`/api/conversations/${cid}/messages`, {method: 'POST',
    headers: {'Content-Type': 'application/json'}, body: JSON.stringify({content})});
  const reader = r.body.getReader(); const dec = new TextDecoder(); let buf = '';
  for (;;) { const {value, done} = await reader.read(); if (done) break;
    buf += dec.decode(value, {stream: true}); let i;
    while ((i = buf.indexOf('\\n')) >= 0) { const ev = JSON.parse(buf.slice(0, i)); buf = buf.slice(i + 1);
      if (ev.type === 'delta') li.textContent += ev.content; } }
};
start();
</script>"""


def _key(cid: str) -> str:
    return f"chat/{cid}"


def _reply_words(text: str) -> list[str]:
    """The stand-in model's reply, a token a word: thirteen words about the question (a count
    the saves every SAVE_EVERY tokens do not divide, so the last words reach the store only with
    the reply's last write)."""
    words = ["You", "said", str(len(text.split())), "words,", "starting", "with", *text.split()[:3]]
    return [f"{w} " for w in (words + ["and", "that", "is", "all."])]


DELTAS = os.environ.get("PROGRESSIVE_STORE", "list") == "deltas"


async def _write(cid: str, add: Callable[[Any], object]) -> Any:
    """One write and the TTL's renewal in one transaction; the write's own answer."""
    async with R.pipeline(transaction=True) as tx:
        add(tx)
        tx.expire(_key(cid), TTL_S)
        got, _ = await tx.execute()
    return got


async def _push(cid: str, message: dict[str, object]) -> Any:
    """Append a message; where it is: its index in the list (deltas: its entry's id)."""
    if DELTAS:
        return await _write(cid, lambda tx: tx.xadd(_key(cid), {"event": "message", "body": json.dumps(message)}))
    return int(await _write(cid, lambda tx: tx.rpush(_key(cid), json.dumps(message)))) - 1


async def _put(cid: str, index: Any, message: dict[str, object], saved: int) -> int:
    """The reply so far; ``saved``: how much of its content is already stored (deltas: only
    the rest is appended). Returns the content's length stored now."""
    text = str(message["content"])
    if DELTAS:
        event = {"id": message["id"], "text": text[saved:], "state": message["state"]}
        await _write(cid, lambda tx: tx.xadd(_key(cid), {"event": "delta", "body": json.dumps(event)}))
    else:
        await _write(cid, lambda tx: tx.lset(_key(cid), index, json.dumps(message)))
    return len(text)


async def _read(cid: str) -> list[dict[str, Any]]:
    if not DELTAS:
        return [json.loads(r) for r in await R.lrange(_key(cid), 0, -1)]
    rows: dict[str, dict[str, Any]] = {}
    for _, f in await R.xrange(_key(cid)):
        body = json.loads(f[b"body"])
        if f[b"event"] == b"message":
            rows[body["id"]] = body
        elif body["id"] in rows:  # a delta: the reply's next words and its state
            rows[body["id"]]["content"] += body["text"]
            rows[body["id"]]["state"] = body["state"]
    return list(rows.values())


async def _remove(cid: str, first: Any, last: Any) -> None:
    """The last turn's two messages taken out (LREM by value; deltas: XDEL of their entries)."""
    if DELTAS:
        await R.xdel(_key(cid), first, last)
        return
    for row in await R.lrange(_key(cid), first, last):
        await R.lrem(_key(cid), -1, row)


class Page(tornado.web.RequestHandler):
    def get(self) -> None:
        self.write(PAGE)


class Conversations(tornado.web.RequestHandler):
    def post(self) -> None:
        self.set_status(201)
        self.write({"conversation": {"id": secrets.token_urlsafe(12)}})


class Messages(tornado.web.RequestHandler):
    async def get(self, cid: str) -> None:
        self.write({"data": await _read(cid)})

    async def post(self, cid: str) -> None:
        try:
            content = str(json.loads(self.request.body or b"{}").get("content") or "").strip()
        except ValueError:
            content = ""
        if not content:
            self.set_status(422)
            self.write({"error": "content is required"})
            return
        q = await _push(cid, {"id": secrets.token_hex(4), "role": "user", "content": content, "state": "complete"})
        reply = {"id": secrets.token_hex(4), "role": "assistant", "content": "", "state": "streaming"}
        a = await _push(cid, reply)
        self.set_header("Content-Type", "application/x-ndjson")
        gone = not await self._line({"type": "start", "message_id": reply["id"]})
        saved = 0
        for i, word in enumerate(_reply_words(content)):
            if gone and ON_CUT == "mark" or gone and "rollback_on_cut" in BUGS:
                break
            await asyncio.sleep(TOKEN_GAP_S)  # the model's pace
            reply["content"] = str(reply["content"]) + word
            if (i + 1) % SAVE_EVERY == 0:
                saved = await _put(cid, a, reply, saved)
            gone = gone or not await self._line({"type": "delta", "content": word})
        if gone and "rollback_on_cut" in BUGS:
            await _remove(cid, q, a)  # the turn "did not finish": both its messages removed
            return
        reply["content"] = str(reply["content"]).rstrip()
        reply["state"] = "interrupted" if gone and ON_CUT == "mark" else "complete"
        if "final_unawaited" in BUGS:
            task = asyncio.ensure_future(_put(cid, a, reply, saved))
            _tasks.add(task)
            task.add_done_callback(_tasks.discard)
        else:
            await _put(cid, a, reply, saved)
        await self._line({"type": "done", "message_id": reply["id"]})

    async def _line(self, event: dict[str, object]) -> bool:
        """One NDJSON line to the browser; False once it has gone."""
        try:
            self.write(json.dumps(event) + "\n")
            await self.flush()
            return True
        except tornado.iostream.StreamClosedError:
            return False


async def main() -> None:
    app = tornado.web.Application(
        [
            (r"/", Page),
            (r"/api/conversations", Conversations),
            (r"/api/conversations/([A-Za-z0-9_-]+)/messages", Messages),
        ]
    )
    app.listen(int(os.environ["PORT"]), address="127.0.0.1")
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main())
