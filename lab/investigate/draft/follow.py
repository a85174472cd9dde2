"""Where `lab init` finds a reply that is not in its message's answer: the message answered at
once (202 {"turn": "9f3a"}) and the reply streamed on a request of its own the page opens with
that id (``new EventSource("/api/turns/" + turn + "/events")``) -- an app that queues its model
call and streams it on a GET. Drafted as ``[stream] follow`` once that GET, with the answer's id,
streamed; None otherwise, nothing drafted."""

from __future__ import annotations

from typing import Any

from lab.investigate.draft.client import Client
from lab.investigate.draft.infer import Draft, end_event
from lab.investigate.draft.routes import ID, Routes
from lab.investigate.draft.session import made_id

STREAM_TYPES = ("text/event-stream", "application/x-ndjson", "application/jsonl")


def stream_type(ctype: str, chunked: bool) -> str | None:
    """The content type of an answer that streams (SSE, NDJSON; plain text sent in chunks, as the
    Vercel AI SDK's text stream and a bare token stream are), else None."""
    plain = ctype.startswith("text/plain") and chunked
    return ctype.split(";")[0].strip() if plain or any(t in ctype for t in STREAM_TYPES) else None


def end(d: Draft, body: str) -> None:
    """[stream] end: the stream's own last event, where it comes once."""
    found = end_event(body)
    if found is not None:
        d.put(
            "stream",
            "end",
            found,
            "the answer's last event, once in it: a send counts as answered when it comes (drop the line if "
            "the app's page waits for the stream to close)",
        )


def reply_stream(c: Client, d: Draft, doc: Any, page: Routes) -> bool:
    """A message's answer with no reply in it (``doc``) but an id, which one of the page's GETs
    with a placeholder takes and answers with a stream: that GET is drafted as [stream] follow,
    and read to its end -- an app that makes the reply only when it is asked for stores it only
    then, and the history read next must hold it."""
    found = made_id(doc)
    if found is None:
        return False
    id_path, turn = found
    for path in page.gets(1):
        status, ctype, _ = c.call("GET", path.replace(ID, turn))
        if 200 <= status < 300 and (streamed := stream_type(ctype, c.chunked)):
            named = path.replace(ID, "{turn}")
            why = f"the message's answer gave {id_path} ({turn[:12]}), and GET {named} with it streamed ({streamed})"
            d.put("stream", "request", {}, why)
            d.put("stream", "follow", named, why)
            d.put("stream", "follow_id", id_path, why)
            end(d, c.body)
            return True
    return False
