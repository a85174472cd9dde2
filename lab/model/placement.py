"""Where each sent message's rows are in a read of the conversation (final or shown).

By id where the rows carry ids; otherwise by (role, text, occurrence) -- a user row by the text
sent, a reply row by the reply text the answer carried -- so two equal reply texts are two
rows, not a duplicate and a loss. Where equal texts leave a choice, a reply belongs to the
message whose question is the nearest stored before it; where the reply's text is not known,
by that position alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from lab.model.history import Row, Send

ROLES = ("user", "assistant")


@dataclass
class _Msg:
    id: str
    text: str
    reply: str | None
    sends: list[Send]


@dataclass
class Placement:
    """Where one message's rows are in a read (positions, in stored order)."""

    user: list[int] = field(default_factory=list)
    reply: list[int] = field(default_factory=list)


def _messages(sends: list[Send]) -> list[_Msg]:
    out: dict[str, _Msg] = {}
    for s in sends:
        m = out.setdefault(s.id, _Msg(s.id, s.text, None, []))
        m.sends.append(s)
        if s.reply is not None and (m.reply is None or s.outcome == "ok"):
            m.reply = s.reply
    return list(out.values())


def place(rows: list[Row], sends: list[Send]) -> tuple[dict[str, Placement], list[int]]:
    """Each message's rows in ``rows``, and the positions of rows of ids never sent."""
    msgs = _messages(sends)
    by_id = {m.id: Placement() for m in msgs}
    unexpected: list[int] = []
    text_rows: list[int] = []
    for pos, r in enumerate(rows):
        if not r.id:
            text_rows.append(pos)
        elif r.id not in by_id:
            unexpected.append(pos)
        elif r.role in ROLES:
            getattr(by_id[r.id], "user" if r.role == "user" else "reply").append(pos)
    if text_rows:
        _place_by_text(rows, text_rows, msgs, by_id)
    return by_id, unexpected


def _user_candidates(row: Row, msgs: list[_Msg]) -> list[_Msg]:
    exact = [m for m in msgs if m.text == row.text]
    if exact:
        return exact
    inside = [m for m in msgs if m.text and m.text in row.text]  # an app may decorate the text
    longest = max((len(m.text) for m in inside), default=0)
    return [m for m in inside if len(m.text) == longest]


def _place_by_text(rows: list[Row], positions: list[int], msgs: list[_Msg], by_id: dict[str, Placement]) -> None:
    # User rows: the first message of that text without a row yet (occurrence), else a duplicate.
    owner_at: dict[int, _Msg] = {}
    for pos in positions:
        if rows[pos].role != "user":
            continue
        cands = _user_candidates(rows[pos], msgs)
        if not cands:
            continue  # the app's own row (a greeting, a system note): not the lab's business
        m = next((c for c in cands if not by_id[c.id].user), cands[-1])
        by_id[m.id].user.append(pos)
        owner_at[pos] = m

    replies = [p for p in positions if rows[p].role == "assistant"]
    mirrored = _runs_backwards(rows, replies, msgs, owner_at)

    def question_before(pos: int) -> _Msg | None:
        """The reply's own question: the nearest stored question before it (after it, where
        the list runs the other way)."""
        near = [p for p in owner_at if (p > pos if mirrored else p < pos)]
        return owner_at[(min if mirrored else max)(near)] if near else None

    known = {m.reply for m in msgs if m.reply is not None}

    def pool(pos: int) -> list[_Msg]:
        text = rows[pos].text
        by_text = [m for m in msgs if m.reply is not None and m.reply == text]
        if by_text:
            # ... and the messages whose answer was never seen (a failed send whose write
            # landed): their reply may have the same text. Those with the text come first.
            return by_text + [m for m in msgs if m.reply is None]
        # Not a reply text any answer carried: by position, among messages whose reply text is
        # unknown or was stored differently from how it was answered.
        if text in known:
            return []
        return [m for m in msgs if m.reply is None or not any(rows[p].text == m.reply for p in replies)]

    left: list[int] = []
    # Pass 1: a reply right after its own question (the nearest stored question before it).
    for pos in replies:
        q, cands = question_before(pos), pool(pos)
        if q is not None and q in cands and not by_id[q.id].reply:
            by_id[q.id].reply.append(pos)
        else:
            left.append(pos)
    _rest(rows, left, pool, question_before, by_id, known, mirrored)


def _rest(
    rows: list[Row],
    left: list[int],
    pool: Callable[[int], list[_Msg]],
    question_before: Callable[[int], _Msg | None],
    by_id: dict[str, Placement],
    known: set[str],
    mirrored: bool = False,
) -> None:
    """Pass 2: the replies not right after their own question -- a reply stored before its
    question (or with its question missing), else a second copy of a reply. Only what the text or
    the position says: a row above every question whose text no answer carried is the app's own
    (a greeting: "Hi! How can I help?"), and a row is a second copy only of a reply with its very
    text -- a greeting or a note beside a reply whose text is not known (cut, streamed) would pass
    for a copy of it too."""

    def gap(m: _Msg, pos: int) -> int:
        """How far above the reply (below, where the list runs the other way) the message's
        question is stored; a question not there, last: a reply stored after two tabs' questions
        is the nearer one's, not that of an earlier turn whose answer failed (2026-12-05: a 500
        turn took a later turn's reply, and the turns read as stored out of order)."""
        ahead = [(p - pos) if mirrored else (pos - p) for p in by_id[m.id].user]
        return min((d for d in ahead if d > 0), default=len(rows))

    for pos in left:
        cands = pool(pos)
        q = question_before(pos)
        if not cands or (q is None and rows[pos].text not in known):
            continue
        # Those whose answer carried the row's text first (as the pool lists them), then by gap.
        free = sorted(
            (m for m in cands if not by_id[m.id].reply), key=lambda m: (m.reply != rows[pos].text, gap(m, pos))
        )
        copy_of = [m for m in ([q] if q is not None and q in cands else []) + cands if m.reply == rows[pos].text]
        if free:
            by_id[free[0].id].reply.append(pos)
        elif copy_of:
            by_id[copy_of[0].id].reply.append(pos)


def _runs_backwards(rows: list[Row], replies: list[int], msgs: list[_Msg], owner_at: dict[int, _Msg]) -> bool:
    """Which way the list runs, from the replies whose text an answer carried: a history served
    newest first (or read against its order) has each reply above its question, and a reply
    whose text is unknown (its send aborted or failed after the write) is placed by that."""
    fwd = rev = 0
    texts = [m.reply for m in msgs]
    for m in msgs:
        if m.reply is None or texts.count(m.reply) > 1:
            continue  # "Sure!" for two messages: which row is whose says nothing of direction
        asked = [p for p, o in owner_at.items() if o is m]
        said = [p for p in replies if rows[p].text == m.reply]
        if asked and said:
            fwd, rev = fwd + (min(said) > min(asked)), rev + (min(said) < min(asked))
    return rev > fwd
