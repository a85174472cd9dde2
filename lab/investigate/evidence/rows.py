"""A target's answers read by its spec: a JSON path into a reply, the history as the lab's rows
(in whatever shape the spec says: objects or "role:content" strings, either order)."""

from __future__ import annotations

import json
import re
import time
from typing import Any

from lab.investigate.evidence.answers import Answer, led_elsewhere
from lab.common.html_select import html_items
from lab.model.history import Outcome, Row, Send
from lab.investigate.spec.parse import History, Spec


def json_path(doc: Any, path: str) -> Any:
    """A minimal JSON path: $ or $.a.b (objects only). Raises KeyError naming the missing step."""
    node = doc
    for step in path.split(".")[1:]:
        if not isinstance(node, dict) or step not in node:
            raise KeyError(f"{path}: no field {step!r} in {type(node).__name__}")
        node = node[step]
    return node


def as_fields(item: Any) -> Any:
    """An item that is a list of plain values ([role, text], a Gradio-style [question, reply]) as
    an object whose fields are its places ("0", "1"); anything else as it is."""
    if isinstance(item, list) and item and all(isinstance(v, (str, int, float, type(None))) for v in item):
        return {str(i): v for i, v in enumerate(item)}
    return item


def parse_history(spec: History, body: str) -> list[tuple[str, str]]:
    """The history response -> (role, content) rows, oldest first. ValueError says what was
    expected when the body is not of the spec's form."""
    return [(role, content) for role, content, _ in _items(spec, body)]


def parse_rows(spec: History, body: str) -> list[Row]:
    """The history response -> the lab's rows, oldest first: the spec's roles as "user" and
    "assistant" (others kept as they are), ids where history.id_field names them."""
    names = {spec.user_role: "user", spec.assistant_role: "assistant"}
    return [Row(mid, names.get(role, role), content) for role, content, mid in _items(spec, body)]


def _text(content: Any) -> str:
    """A message's text: a string as it is; a list of parts (the Vercel AI SDK's UIMessage
    ``parts``, OpenAI's and Anthropic's content blocks) as its text parts joined -- a tool call,
    an image or a reasoning part is no text the user was shown as the reply."""
    if isinstance(content, list):
        texts = [
            p["text"]
            for p in content
            if isinstance(p, dict)
            and isinstance(p.get("text"), str)
            and p.get("type", "text") in ("text", "output_text")
        ]
        return "".join(texts)
    return str(content)


def _items(spec: History, body: str) -> list[tuple[str, str, str]]:
    if spec.format == "html":
        roles = (spec.user_role, spec.assistant_role)
        shown = [(r, c, "") for r, c in html_items(body, spec.items, spec.role_field, spec.content_field, roles)]
        return shown[::-1] if spec.order == "newest_first" else shown
    try:
        doc = json.loads(body)
    except ValueError:
        raise ValueError(f"not JSON (starts {body[:80]!r})") from None
    try:
        items = json_path(doc, spec.items)
    except KeyError as exc:
        raise ValueError(str(exc)) from None
    if not isinstance(items, list):
        raise ValueError(f"{spec.items} is a {type(items).__name__}, expected a list")
    rows: list[tuple[str, str, str]] = []
    for i, listed in enumerate(items):
        mid, it = "", as_fields(listed)  # [role, text] items: fields "0" and "1"
        if spec.format == "pairs":
            rows += _pair(spec, i, it)
            continue
        if spec.format == "strings":
            if not isinstance(it, str) or spec.separator not in it:
                raise ValueError(f'item {i} = {it!r}: expected a "role{spec.separator}content" string')
            role, _, content = it.partition(spec.separator)
        else:
            if not isinstance(it, dict) or spec.role_field not in it or spec.content_field not in it:
                raise ValueError(
                    f"item {i} = {str(it)[:80]!r}: expected an object with "
                    f"{spec.role_field!r} and {spec.content_field!r}"
                )
            role, content = str(it[spec.role_field]), _text(it[spec.content_field])
            if spec.id_field:
                mid = str(it.get(spec.id_field) or "")
        rows.append((role.strip(), content, mid))
    return rows[::-1] if spec.order == "newest_first" else rows


def _pair(spec: History, i: int, it: Any) -> list[tuple[str, str, str]]:
    """One turn's item -- its question and its reply, null or "" until stored -- as its rows, the
    reply's after the question's, whatever the list's order (pairs reversed reverse the turns)."""
    if not isinstance(it, dict) or spec.content_field not in it:
        raise ValueError(f"item {i} = {str(it)[:80]!r}: expected an object with {spec.content_field!r}")
    mid = str(it.get(spec.id_field) or "") if spec.id_field else ""
    rows = [(spec.user_role, _text(it[spec.content_field]), mid)]
    reply = it.get(spec.reply_field)
    if reply not in (None, "", []):
        rows.append((spec.assistant_role, _text(reply), mid and f"{mid}/reply"))  # the reply's own id
    return rows[::-1] if spec.order == "newest_first" else rows


def http_stream(spec: Spec, streamed: bool) -> bool:
    """The answer streams over HTTP: asked for a stream, or every answer streams (request = {})."""
    return spec.transport is None and spec.stream is not None and (streamed or not spec.stream.request)


def end_read(spec: Spec, streamed: bool) -> str | None:
    """The app's own end event the lab reads for a streamed answer ([stream] end, on the lab's page:
    the app's own page and frames answer otherwise); None: no stream, or an end it cannot read."""
    if not http_stream(spec, streamed) or spec.page is not None:
        return None
    assert spec.stream is not None
    return spec.stream.end or None


# A 2xx body's own word that something failed: a field named so, not empty, or false where a
# field says it worked -- an app that answers the reply with a warning has told its user.
_FAILED_KEY = re.compile(r"error|warn|fail", re.I)
_WORKED_KEY = re.compile(r"^(ok|success|succeeded|saved|stored|persisted|committed)$", re.I)


def says_failure(body: str) -> str | None:
    """Where a JSON body itself says something failed -- a non-empty error or warning field, or
    false at ok / saved / stored -- that field's path; None: nothing of the kind (or no JSON)."""
    try:
        nodes: list[tuple[str, Any]] = [("$", json.loads(body))]
    except ValueError:
        return None
    while nodes:
        path, node = nodes.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
        for k, v in items:
            here = f"{path}.{k}" if isinstance(node, dict) else f"{path}[{k}]"
            if isinstance(k, str) and (
                (_FAILED_KEY.search(k) and v not in (None, "", [], {}, False, 0))
                or (_WORKED_KEY.match(k) and v is False)
            ):
                return here
            nodes.append((here, v))
    return None


_WHOLE_PAGE = re.compile(r"<(?:html|body)\b", re.I)


def shows_no_message(spec: Spec, body: str) -> str | None:
    """Where a server-rendered app ([history] format = "html") answered a send with a fragment
    for its page to insert (htmx: a 4xx/5xx is not swapped in by default, so such apps answer an
    error 200 with a fragment that says it) holding none of the history's message elements: what
    the user was shown is no message, so no acknowledgement. A whole page (a redirect followed
    back to the conversation) is the page's own read: its status says, not this."""
    h = spec.history
    if h.format != "html" or not body.strip() or _WHOLE_PAGE.search(body):
        return None
    try:
        shown = html_items(body, h.items, h.role_field, h.content_field, (h.user_role, h.assistant_role))
    except ValueError:
        return None
    return None if shown else f"its HTML holds no {h.items!r}"


def answer(spec: Spec, raw: Answer, mid: str, text: str, turn: int, streamed: bool, cut: bool, t_invoke: float) -> Send:
    """A send's raw answer (status, body, timing) as the lab's Send: ok (2xx in the spec's form),
    fail (4xx), info (5xx, timeout, a 2xx outside the spec: it may have landed)."""
    status = raw["status"]
    error = raw["error"]
    reply: str | None = None
    outcome: Outcome
    if status is None:
        outcome = "info"  # timeout / connection reset: it may have landed
    elif raw.get("redirected") and (where := led_elsewhere(spec, raw.get("url") or "")) is not None:
        outcome, error = "info", f"HTTP {status} at {where}, after a redirect: not the conversation's page"
    elif 200 <= status < 300:
        outcome = "ok"
        if spec.chat.reply_path and not streamed:  # a stream's body is the app's own format
            try:
                reply = str(json_path(json.loads(raw["body"]), spec.chat.reply_path))
            except (ValueError, KeyError) as exc:
                outcome, error = "info", f"2xx outside the spec ({spec.chat.reply_path}): {exc}"
    elif 400 <= status < 500:
        outcome = "fail"
    else:
        outcome = "info"  # 5xx: the write may or may not have been applied
    marker = None if cut else end_read(spec, streamed)
    if outcome == "ok" and marker and marker not in raw["body"]:
        # The app's own "complete" never came (an error event instead, a stream closed early):
        # not answered, as its page would say -- the turn may or may not be stored.
        outcome, error = "info", f"the stream ended without its end event ({marker!r}): {raw['body'][-80:]!r}"
    if outcome == "ok" and raw.get("reply") is not None:  # frames: the reply as they carried it whole
        reply = str(raw["reply"])
    if status is not None and status >= 400 and error is None:
        error = raw["body"][:160]
    s = Send(
        mid,
        text,
        turn,
        reply=reply,
        ms=round(raw["ms"], 1),
        html="text/html" in raw["type"],
        streamed=streamed,
        cut=raw["cut"] if cut else None,
        t_invoke=t_invoke,
    )
    # The request's own times where the page knows them (two sends "at once" are judged by
    # when they really left and ended), else as this side saw them.
    s.t_invoke = raw.get("start") or t_invoke
    end, marked = raw.get("end") or time.time(), raw.get("marked") if marker else None
    # Answered when the app's end event came, not at the connection's close: a reply stored
    # after "event: done" and before the close was stored after its answer (a Rust app, a Quart
    # app written unseen, 2026-12-05). Only where the spec names that event: which event a page
    # takes for the end is in its code, not on the wire.
    s.complete(outcome, status, error or (f"HTTP {status}" if status else ""), min(end, marked) if marked else end)
    return s


def replies_from(rows: list[Row], sends: list[Send]) -> None:
    """A reply the answer did not give as text (a stream, in the app's own format; a body gone
    with a page reloaded at once), as the settled history holds it: the assistant row that
    answers the send's own user row. The store's record places a reply's write by its text
    (lab.model.store): without it, a reply stored after its answer -- saved once the stream
    ended -- is invisible.

    Only where the history says whose reply it is. Read in order, an assistant row answers the
    one question waiting; while two wait (a reply missing or landed late, the writes of two turns
    interleaved) it may be either's, and neither is placed -- replies that repeat are common, so
    the texts cannot tell them apart. Not for a question stored against its turn's order (a
    history read newest first), nor a cut answer (its reply was cut short), nor a turn sent twice
    at once or a text sent twice (whose row is whose is the race itself)."""
    shared = {s.id for s in sends for o in sends if o is not s and (o.turn == s.turn or o.text == s.text)}
    at = {s.id: next((i for i, r in enumerate(rows) if r.role == "user" and r.text == s.text), None) for s in sends}
    asked = {i: s for s in sends if (i := at[s.id]) is not None}

    def placeable(s: Send) -> bool:
        if (i := at[s.id]) is None:
            return False
        in_order = all((j < i) == (o.turn < s.turn) for o in sends if (j := at[o.id]) is not None and o.turn != s.turn)
        return s.outcome == "ok" and s.reply is None and not s.cut and s.id not in shared and in_order

    waiting: list[Send | None] = []  # questions not yet answered; None: one of several, unknown which
    for i, r in enumerate(rows):
        if r.role == "user":
            waiting.append(asked.get(i))
        elif r.role == "assistant" and waiting:
            if len(waiting) == 1 and (s := waiting[0]) is not None and placeable(s):
                s.reply = r.text
            waiting = [None] * (len(waiting) - 1)
