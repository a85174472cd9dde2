"""`lab init`'s inferences, as pure functions over what the app answered: where a reply is in a
chat answer, the history's shape around a message the lab sent, the Redis key named after a
session. Each returns what it found with the evidence, or None: a draft says what it guessed
and names what it could not infer, never invents it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from lab.investigate.evidence.rows import as_fields

REPLY_NAMES = ("reply", "answer", "response", "completion", "output", "content", "message", "text")
ROLE_NAMES = ("role", "author", "sender", "from", "type")
CONTENT_NAMES = ("content", "text", "message", "body")
SEPARATORS = (":", "|", "\t", " ")


@dataclass
class Draft:
    """A spec being drafted: its sections (TOML values), per field why it was chosen, and what
    could not be inferred (section.field -> what to give)."""

    sections: dict[str, dict[str, Any]] = field(default_factory=dict)
    why: dict[str, str] = field(default_factory=dict)  # "section.key" -> the evidence
    unknown: dict[str, str] = field(default_factory=dict)  # "section.key" -> what is needed
    notes: list[str] = field(default_factory=list)  # optional parts not inferred, and why

    def put(self, section: str, key: str, value: Any, why: str) -> None:
        self.sections.setdefault(section, {})[key] = value
        self.why[f"{section}.{key}"] = why
        self.unknown.pop(f"{section}.{key}", None)

    def missing(self, section: str, key: str, need: str) -> None:
        self.unknown[f"{section}.{key}"] = need

    def get(self, section: str, key: str) -> Any:
        return self.sections.get(section, {}).get(key)

    def history(self, path: str, shape: HistoryShape, why: str) -> None:
        """The history's route and its shape, as the read after the send showed it."""
        self.put("history", "path", path, why)
        fields = {
            "strings": ("separator", "user_role", "assistant_role"),
            "pairs": ("content_field", "reply_field"),  # no roles: the lab names the rows
        }.get(shape.format, ("role_field", "content_field", "user_role", "assistant_role"))
        for key in ("items", "format", *fields, "order"):
            self.put("history", key, getattr(shape, key), "the read after the send")


def reply_path(answer: Any, sent: str) -> tuple[str, str] | None:
    """Where the reply is in a chat answer: a string field that is not the message sent, nor an
    id-like word (a create call's answer, {"conv": "CNL88sYj..."}, is no reply) -- the reply names
    first. ($.path, the reply's text)."""
    if not isinstance(answer, dict):
        return None
    strings = {
        k: v for k, v in answer.items() if isinstance(v, str) and v and v != sent and (k in REPLY_NAMES or not an_id(v))
    }
    for name in (*REPLY_NAMES, *strings):
        if name in strings:
            return f"$.{name}", strings[name]
    for k, v in answer.items():  # one level down: {"message": {"content": ...}}
        if isinstance(v, dict):
            inner = reply_path(v, sent)
            if inner is not None:
                return f"$.{k}{inner[0][1:]}", inner[1]
    return None


@dataclass(frozen=True)
class HistoryShape:
    items: str  # $ or $.messages
    format: str  # objects | strings | pairs
    role_field: str = "role"
    content_field: str = "content"
    separator: str = ":"
    order: str = "oldest_first"
    user_role: str = "user"
    assistant_role: str = "assistant"
    reply_field: str = "reply"  # pairs: the turn's reply beside its question (content_field)


def lists(doc: Any) -> list[tuple[str, list[Any]]]:
    """Every list in ``doc`` at $ or one or two fields down, with its path."""
    out: list[tuple[str, list[Any]]] = []
    if isinstance(doc, list):
        out.append(("$", doc))
    elif isinstance(doc, dict):
        for k, v in doc.items():
            if isinstance(v, list):
                out.append((f"$.{k}", v))
            elif isinstance(v, dict):
                out += [(f"$.{k}.{k2}", v2) for k2, v2 in v.items() if isinstance(v2, list)]
    return out


def order_of_two(d: Draft, doc: Any, items: str, first: str, second: str) -> bool:
    """The history's order from a read listing two messages sent one after the other (where no
    reply's text places the message): which of them ``items`` lists first. False: not told
    (either not shown)."""
    return order_from(d, next((v for k, v in lists(doc) if k == items), []), first, second)


def order_from(d: Draft, items: list[Any], first: str, second: str) -> bool:
    """The order of a history's ``items`` (JSON items, a page's message texts) holding two
    messages sent one after the other. False: not told (either not shown)."""
    where = [next((i for i, it in enumerate(items) if x in str(it)), None) for x in (first, second)]
    if where[0] is None or where[1] is None:
        return False
    before = where[1] < where[0]
    order = "newest_first" if before else "oldest_first"
    d.put("history", "order", order, f"a second message listed {'before' if before else 'after'} the first")
    return True


def history_shape(doc: Any, sent: str, reply: str | None) -> HistoryShape | None:
    """The history's shape, from a read made after one send of ``sent`` (answered ``reply``):
    the list holding that text, its items' fields (or "role<sep>text" strings), the roles of
    the message and its reply, and their order."""
    for path, found in lists(doc):
        items = [as_fields(x) for x in found]
        for i, it in enumerate(items):
            shape = _item_shape(it, sent, items)
            if shape is None:
                paired = _pair_shape(it, sent, reply)
                if paired is not None:
                    return HistoryShape(path, "pairs", "", paired[0], reply_field=paired[1])
                continue
            fmt, role_f, content_f, sep, user_role = shape
            others = [(j, _role_of(x, role_f, sep)) for j, x in enumerate(items) if j != i]
            after = [(j, r) for j, r in others if r and r != user_role]
            bot = next((r for j, r in after if reply is None or reply in str(items[j])), None)
            bot = bot or next((r for _, r in after), "assistant")
            reply_at = next((j for j, x in enumerate(items) if j != i and reply and reply in str(x)), None)
            order = "newest_first" if reply_at is not None and reply_at < i else "oldest_first"
            return HistoryShape(path, fmt, role_f, content_f, sep, order, user_role, bot)
    return None


def _item_shape(it: Any, sent: str, items: list[Any]) -> tuple[str, str, str, str, str] | None:
    if isinstance(it, dict):
        content = next((k for k, v in it.items() if v == sent), None)
        if content is None:
            return None
        role = next((k for k in ROLE_NAMES if isinstance(it.get(k), str) and k != content), None)
        if role is None:
            role = _own_role_field(it, content, [x for x in items if isinstance(x, dict) and x is not it])
        if role is None:
            return None
        return "objects", role, content, ":", str(it[role])
    if isinstance(it, str) and it.endswith(sent) and len(it) > len(sent):
        head = it[: -len(sent)]
        sep = next((s for s in SEPARATORS if head.endswith(s)), None)
        if sep is None or not head[: -len(sep)].strip():
            return None
        return "strings", "role", "content", sep, head[: -len(sep)].strip()
    return None


PAIR_REPLY_NAMES = (*REPLY_NAMES, "a", "ai", "assistant", "bot")


def _pair_shape(it: Any, sent: str, reply: str | None) -> tuple[str, str] | None:
    """An item holding a whole turn -- its question and its reply, {"prompt", "reply"}, as apps
    that store turns do -- with no role field: (the question's field, the reply's field). The
    reply's field: the one holding the reply's text where it is known, else the one of a reply's
    name (null until stored). Not told: None (the history's shape is asked)."""
    if not isinstance(it, dict):
        return None
    asked = next((k for k, v in it.items() if v == sent), None)
    if asked is None:
        return None
    if reply:
        held = [k for k, v in it.items() if k != asked and v == reply]
        return (asked, held[0]) if len(held) == 1 else None
    named = [
        k for k in it if k != asked and k.lower() in PAIR_REPLY_NAMES and (it[k] is None or isinstance(it[k], str))
    ]
    return (asked, named[0]) if len(named) == 1 else None


def _own_role_field(it: dict[str, Any], content: str, others: list[dict[str, Any]]) -> str | None:
    """A role field named the app's own way ("who", "speaker"): its one other short word. Beside
    an id or a sequence number ("seq": "1796503953412-0", a stream entry's id) the word is the
    value made of letters only; beside a kind all items share ("kind": "msg"), the one whose value
    the reply's item does not repeat. Still more than one: not decided (the spec asks)."""
    words = [k for k, v in it.items() if k != content and isinstance(v, str) and 0 < len(v) <= 20 and " " not in v]
    for narrower in (
        lambda k: it[k].replace("_", "").replace("-", "").isalpha(),
        lambda k: any(isinstance(o.get(k), str) and o[k] != it[k] for o in others),
    ):
        if len(words) > 1:
            words = [k for k in words if narrower(k)] or words
    return words[0] if len(words) == 1 else None


def _role_of(it: Any, role_field: str, sep: str) -> str | None:
    if isinstance(it, dict):
        v = it.get(role_field)
        return v if isinstance(v, str) else None
    if isinstance(it, str) and sep in it:
        return it.split(sep, 1)[0].strip() or None
    return None


# Where a first answer gives the conversation's id: a field of its own, or an object's id.
OBJECT_NAMES = ("conversation", "session", "thread", "chat")
ID_NAMES = (
    "conversation_id",
    "conversationId",
    "session_id",
    "sessionId",
    "thread_id",
    "threadId",
    "chat_id",
    "chatId",
)


def answer_id(answer: Any) -> tuple[str, str] | None:
    """A conversation's id in a chat answer, by its field's name: ($.name, the id) -- at the top,
    or as the id of a conversation object ($.conversation.id)."""
    if not isinstance(answer, dict):
        return None
    for name in (*ID_NAMES, *OBJECT_NAMES):
        if an_id(answer.get(name)):
            return f"$.{name}", str(answer[name])
    for name in OBJECT_NAMES:
        inner = answer.get(name)
        if isinstance(inner, dict) and an_id(inner.get("id")):
            return f"$.{name}.id", str(inner["id"])
    return None


def an_id(v: Any) -> bool:
    """An id: one word (a reply in a field named "chat" is not one), or a whole number (an
    INCR counter's, a database row's: {"id": 1})."""
    if isinstance(v, int) and not isinstance(v, bool):
        return v >= 0
    return isinstance(v, str) and 0 < len(v) <= 128 and not any(c.isspace() for c in v)


_NAMED = re.compile(r'"(?:type|kind|event|status)"\s*:\s*"[^"]*"')


def end_event(body: str) -> str | None:
    """The text of a completed streamed answer's own last event, where it comes once: an SSE
    ``event:`` line ("event: done"), else its last ``data:`` line where that is a fixed word
    ("data: [DONE]"), else an NDJSON last line's kind ('"kind":"done"'). None: no such event (a
    plain token stream, or every event named alike)."""
    lines = [ln.strip() for ln in body.splitlines() if ln.strip()]
    events = [ln for ln in lines if ln.startswith("event:")]
    data = [ln for ln in lines if ln.startswith("data:")]
    if events:
        last = events[-1]
    elif data:
        last = data[-1] if re.fullmatch(r"data:\s*\[?[A-Za-z_]+\]?", data[-1]) else ""
    else:
        found = _NAMED.search(lines[-1]) if lines else None
        last = found.group(0) if found else ""
    return last if last and body.count(last) == 1 else None


def key_pattern(keys: list[str], session: str) -> str | None:
    """The conversation's Redis key as a pattern: the one key named after the session's value,
    with that value as {session} (None: no key, or more than one, holds it)."""
    named = [k for k in keys if session and session in k]
    if len(named) != 1:
        return None
    # The id as a whole part of the name where it is one (conversation 1 of user ada1:
    # u:ada1:conv:1), else wherever it stands once (thr:{ID}:log).
    parts = re.split(r"([:/])", named[0])
    if parts.count(session) == 1:
        return "".join("{session}" if p == session else p for p in parts)
    return named[0].replace(session, "{session}") if named[0].count(session) == 1 else None


# A part of a key's name that reads as an id: a number (a counter), 8+ characters of an id's
# alphabet with a digit (a uuid, a hex digest), or 16+ mixing cases (a token_urlsafe).
ID_PART = re.compile(r"\d+|(?=[^:/]*\d)[\w.=-]{8,}|(?=[^:/]*[a-z])(?=[^:/]*[A-Z])[\w-]{16,}")


def key_glob(key: str) -> str | None:
    """A conversation's key whose name holds an id the lab does not see (one inside a signed
    cookie, a hash of the session, a login's user id) as the spec's `*` form: each part between
    separators that reads as an id is `*` (None: no part does)."""
    parts = re.split(r"([:/])", key)
    out = ["*" if ID_PART.fullmatch(p) else p for p in parts]
    return "".join(out) if "*" in out else None


def pick_cookie(names: list[str]) -> str | None:
    """The session cookie among those the app set: the one named like a session, else the only one."""
    liked = [n for n in names if any(w in n.lower() for w in ("sid", "session", "conv", "chat"))]
    if len(liked) == 1:
        return liked[0]
    return names[0] if len(names) == 1 else None


STREAM_TYPES = ("text/event-stream", "application/x-ndjson", "application/jsonl")


def stream_type(ctype: str, chunked: bool) -> str | None:
    """The content type of an answer that streams (SSE, NDJSON; plain text sent in chunks, as the
    Vercel AI SDK's text stream and a bare token stream are), else None."""
    plain = ctype.startswith("text/plain") and chunked
    return ctype.split(";")[0].strip() if plain or any(t in ctype for t in STREAM_TYPES) else None


def put_end_event(d: Draft, body: str) -> None:
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


def reply_elsewhere(d: Draft, history: Any, sent: str, answer: Any, body: str) -> str | None:
    """Why [chat] reply_from = "history": the history shows a reply after ``sent`` its answer holds
    nowhere. "": not so (the answer holds it, an unread shape); None: no reply shows yet."""
    from lab.investigate.evidence.rows import parse_rows
    from lab.investigate.spec.schema import History

    got = {k: d.get("history", k) for k in History.__dataclass_fields__ if k not in ("id_field", "reply_field")}
    got["separator"] = got["separator"] or ":"
    try:
        rows = parse_rows(History(**got), json.dumps(history)) if got["format"] in ("objects", "strings") else []
    except (ValueError, TypeError):
        return ""
    asked = max((i for i, r in enumerate(rows) if r.role == "user" and r.text == sent), default=len(rows))
    reply = next((r.text for r in rows[asked + 1 :] if r.role == "assistant" and r.text), None)
    if not rows or (reply is not None and (reply in body or _holds(answer, reply))):
        return ""
    return reply and f"the message's answer holds none of the reply the history then showed ({reply[:40]!r})"


def _holds(doc: Any, text: str) -> bool:
    """Whether a JSON document has ``text`` in one of its strings (escaped in its body)."""
    if isinstance(doc, str):
        return text in doc
    values = doc.values() if isinstance(doc, dict) else doc if isinstance(doc, list) else []
    return any(_holds(v, text) for v in values)
