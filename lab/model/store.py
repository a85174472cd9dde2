"""What the store's record (Trial.store, lab.investigate.evidence.store) says about a trial's turns:
when each turn's rows first reached Redis against when its answer came. Pure functions.

Both clocks are the machine's: Redis's MONITOR timestamps and the browser's answer times
(Resource Timing's responseEnd, or the frame's arrival) are read from the same wall clock. The
answer time is when the browser had the answer, after the app sent it: an awaited write is
always before it. CLOCK_GRAIN_S covers the browser's coarsened timer and its monotonic clock
drifting from the wall clock over a page's life.
"""

from __future__ import annotations

import json
from typing import Any

from lab.model.history import Trial

CLOCK_GRAIN_S = 0.010


def answered(t: Trial) -> dict[int, float]:
    """Turn -> when its last acknowledgement came, for turns whose every send was acknowledged
    whole (a cut answer never ended). Two sends of one turn (a double submit) are judged by the
    later answer: a duplicate the app answers at once while the first write is under way is
    not a turn acknowledged before it was stored."""
    out: dict[int, float] = {}
    for turn in sorted({s.turn for s in t.sends}):
        sends = [s for s in t.sends if s.turn == turn]
        if all(s.outcome == "ok" and not s.cut and s.t_complete for s in sends):
            out[turn] = max(s.t_complete or 0.0 for s in sends)
    return out


def _app_writes(t: Trial) -> list[dict[str, Any]]:
    """The app's writes of the key that store turns -- not a cache's fills (filled_on_miss):
    those copy turns kept elsewhere, so they say neither when a turn was stored nor that a
    rewrite put it back."""
    fills = {id(r) for r in filled_on_miss(t)}
    return [r for r in t.store or [] if r["write"] and r["conn"] != "lab" and id(r) not in fills]


def filled_on_miss(t: Trial) -> list[dict[str, Any]]:
    """The app's writes that fill the key from elsewhere, as a cache in front of a database is
    filled: each comes after a read of the key made while the key was absent (nothing written yet
    in the trial, or removed since) with no change in between, and carries, in one command, both
    sides of every turn acknowledged before that read -- the whole conversation at once. (Any of
    the app's connections: a pooled client's read and write of one request may take two.) A
    rewrite that pushes rows back one at a time carries one side of one turn per command. Readers
    that missed together fill it one after another with the same copy (a page's reload and a
    second read at once, 2026-12-05): a write of the value a fill just wrote is a fill too."""
    acked = answered(t)
    out: list[dict[str, Any]] = []
    present, miss_at = False, None  # miss_at: when the key was last read absent, since its last change
    filled = None  # the value the last fill wrote, while nothing else has changed the key since
    for r in (r for r in t.store or [] if r["conn"] != "lab"):
        if r["cmd"] in READ_ONLY:
            if not present and miss_at is None:
                miss_at = r["t"]
            continue
        if r["write"]:
            before = {n for n, done in acked.items() if miss_at is not None and done <= miss_at}
            whole = bool(before) and before <= set(r["user"]) and before <= set(r.get("reply", []))
            if whole or (filled is not None and r.get("value") == filled):
                out.append(r)
                filled, present, miss_at = r.get("value"), True, None
                continue
            present = True
        elif r["cmd"] in REMOVES:
            present = False
        miss_at, filled = None, None
    return out


def first_writes(t: Trial) -> dict[int, tuple[float, float | None]]:
    """Turn -> (when its user text was first written, when its reply was), epoch s, for the
    turns whose user text a write of the app carried. The reply's write is the first carrying
    its text from the user's write on and before the next turn's user write: a reply repeated
    across turns ("Sure!") is still placed, and a later turn's rewrite of earlier rows is not
    taken for it."""
    writes = _app_writes(t)
    user = {}
    for turn in sorted({s.turn for s in t.sends}):
        at = next((r["t"] for r in writes if turn in r["user"]), None)
        if at is not None:
            user[turn] = at
    out: dict[int, tuple[float, float | None]] = {}
    for turn, at in user.items():
        later = [u for tu, u in user.items() if tu > turn]
        until = min(later) if later else float("inf")
        reply = next((r["t"] for r in writes if turn in r["reply"] and at <= r["t"] < until), None)
        out[turn] = (at, reply)
    return out


def comparable(t: Trial) -> list[int]:
    """Turns acknowledged whole whose user row's write the record holds: those it can judge."""
    acked, written = answered(t), first_writes(t)
    return [turn for turn in acked if turn in written]


def stored_late(t: Trial) -> dict[int, float]:
    """Turn -> ms after its answer that a row of it (the user's or the reply's) first reached
    Redis, for acknowledged turns written later than the answer by more than the clock grain."""
    acked, written = answered(t), first_writes(t)
    out = {}
    for turn in comparable(t):
        user, reply = written[turn]
        last = max(user, reply or user)
        if last > acked[turn] + CLOCK_GRAIN_S:
            out[turn] = round((last - acked[turn]) * 1000, 1)
    return out


def never_written(t: Trial) -> set[int] | None:
    """Turns no write of the app carried to Redis during the trial -- not to the conversation's
    key, not to another -- and that its key does not hold at the end; None where the record
    cannot say: there is none, or the app's writes carry no turn's text verbatim (a format
    the lab cannot search: compressed, encrypted, split into other keys)."""
    if t.store is None or t.redis_final is None:
        return None
    written = {n for r in _app_writes(t) for n in r["user"]}
    stored = set(t.redis_final.get("stored_turns", []))
    if not written & stored:
        return None
    elsewhere = {e["turn"] for e in t.store_elsewhere}
    return {s.turn for s in t.sends} - written - stored - elsewhere


REMOVES = ("DEL", "UNLINK")
# The commands that read a value held in a key of each type (TYPE's names).
READS_BY_TYPE = {
    "list": frozenset({"LRANGE", "LINDEX", "LLEN", "LPOS"}),
    "string": frozenset({"GET", "GETRANGE", "MGET", "STRLEN", "JSON.GET"}),
    "hash": frozenset({"HGETALL", "HGET", "HMGET", "HVALS", "HKEYS", "HLEN", "HEXISTS", "HSCAN"}),
    "zset": frozenset({"ZRANGE", "ZREVRANGE", "ZRANGEBYSCORE", "ZREVRANGEBYSCORE", "ZCARD", "ZSCORE", "ZSCAN"}),
    "set": frozenset({"SMEMBERS", "SISMEMBER", "SCARD", "SSCAN"}),
    "stream": frozenset({"XRANGE", "XREVRANGE", "XREAD", "XLEN", "XINFO"}),
    "ReJSON-RL": frozenset({"JSON.GET", "JSON.TYPE", "JSON.ARRLEN", "JSON.OBJKEYS"}),
}
VALUE_READS = frozenset().union(*READS_BY_TYPE.values())
# What only reads a key: every other command of the app on it counts as a change (a command the
# lab does not know resets a quiet window rather than pass unseen).
READ_ONLY = VALUE_READS | {
    "EXISTS", "TYPE", "TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME", "OBJECT", "DUMP", "WATCH", "UNWATCH",
}  # fmt: skip


def rewrite_gaps(t: Trial) -> dict[int, float]:
    """Acknowledged turn -> the longest time (ms) Redis held none of its user row: from a removal
    of the whole key (DEL, UNLINK) outside any MULTI or script, made after the turn's answer,
    to the write that put the row back. A row never put back is a loss (the checker's); a
    removal inside a transaction or a script is atomic: no read sees the gap."""
    acked, writes = answered(t), _app_writes(t)
    out: dict[int, float] = {}
    for r in t.store or []:
        if r["conn"] == "lab" or r["cmd"] not in REMOVES or r.get("atomic", False):
            continue
        for turn, at in acked.items():
            first = next((w["t"] for w in writes if turn in w["user"]), None)
            if at >= r["t"] or first is None or first >= r["t"]:
                continue  # not yet stored and acknowledged when the key was removed
            back = next((w["t"] for w in writes if w["t"] > r["t"] and turn in w["user"]), None)
            if back is not None:
                out[turn] = max(out.get(turn, 0.0), round((back - r["t"]) * 1000, 1))
    return out


def interleaved_rewrites(t: Trial) -> bool:
    """Rewrites that overlapped: two non-atomic removals of the key while two sends were in
    flight together (two tabs), or after a removal the same value pushed back twice before the
    next one. Each rewrite pushes back what it read, so overlapping ones bring rows back twice,
    out of order or not at all -- the rewrite's doing, not another cause's. One rewrite at a
    time writes each value once per removal. Readers that missed together fill a cache with one
    copy twice (filled_on_miss): no rewrite's doing."""
    fills = {id(r) for r in filled_on_miss(t)}
    rows = [r for r in t.store or [] if r["conn"] != "lab" and id(r) not in fills]
    removals = [r["t"] for r in rows if r["cmd"] in REMOVES and not r.get("atomic", False)]
    for i, a in enumerate(t.sends):
        for b in t.sends[i + 1 :]:
            if a.t_complete and b.t_complete and a.t_invoke < b.t_complete and b.t_invoke < a.t_complete:
                lo, hi = min(a.t_invoke, b.t_invoke), max(a.t_complete, b.t_complete)
                if sum(lo <= x <= hi for x in removals) >= 2:
                    return True
    seen: set[str] | None = None  # values written since the last removal (None: none yet)
    for r in rows:
        if r["cmd"] in REMOVES and not r.get("atomic", False):
            seen = set()
        elif seen is not None and r["write"] and "value" in r:
            if r["value"] in seen:
                return True
            seen.add(r["value"])
    return False


APPENDS = ("RPUSH", "LPUSH", "RPUSHX", "LPUSHX", "XADD")
# What can take an appended row out again (a whole-value SET replaces what was there).
TAKES_OUT = (
    *REMOVES, "SET", "SETEX", "PSETEX", "GETSET", "LTRIM", "LREM", "LSET", "LPOP", "RPOP", "LMPOP",
    "LMOVE", "RPOPLPUSH", "RENAME", "RESTORE", "XDEL", "XTRIM", "JSON.SET", "JSON.DEL", "EVAL", "EVALSHA",
    "HDEL", "ZREM", "ZREMRANGEBYSCORE", "ZREMRANGEBYRANK", "SREM", "SPOP",
)  # fmt: skip


def changes(r: dict[str, Any]) -> bool:
    """A record row that changes the key: a write of a value (the record's "write"), or one that
    takes values out -- a removal is no write of a value, but it empties the key."""
    return bool(r["write"]) or r["cmd"] in TAKES_OUT


def still_stored(t: Trial, send_id: str) -> bool | None:
    """Whether the send's row is in Redis still, by the record alone: appended (RPUSH, LPUSH,
    XADD: a row of its own) and nothing after it that could take a row out (a removal, a
    trim, a whole-value SET, a script). None: the record cannot say (no record, the row never
    appended, an older record without send ids)."""
    if t.store is None:
        return None
    rows = [r for r in t.store if r["conn"] != "lab"]
    at = next((i for i, r in enumerate(rows) if r["cmd"] in APPENDS and send_id in r.get("ids", [])), None)
    if at is None:
        return None
    return not any(r["cmd"] in TAKES_OUT for r in rows[at + 1 :])


# Whole-value writes: what the key holds afterwards is what they carry.
REPLACES = ("SET", "SETEX", "PSETEX", "GETSET", "JSON.SET")
# Row-wise writes that add what they carry and take nothing out.
ADDS = (*APPENDS, "HSET", "HMSET", "HSETNX", "ZADD", "SADD", "JSON.ARRAPPEND")


def held_at(t: Trial, at: float) -> set[int] | None:
    """The turns whose user text and reply the conversation's key held at ``at``, by the app's
    commands on it up to then: appends add what they carry, a whole-value write replaces it, a
    removal empties it; a reply repeated across turns counts only from its own turn's first
    write of it on (first_writes). None: the record cannot say -- there is none, or before
    ``at`` came a command that takes part of a value out (a trim, a pop, a rename: which rows is
    not in the record). A script's own commands follow it as lua lines; its line is nothing."""
    got = _held(t, at)
    return None if got is None else got[0]


def sends_held_at(t: Trial, at: float) -> set[str] | None:
    """held_at by send: the ids of the sends whose own user text the key held at ``at``, their
    turn's reply with it (two tabs' sends share a turn: one tab's turn held is not the other's)."""
    got = _held(t, at)
    return None if got is None else got[1]


def _held(t: Trial, at: float) -> tuple[set[int], set[str]] | None:
    if t.store is None:
        return None
    users: set[int] = set()
    ids: set[str] = set()
    replies: set[int] = set()
    for r in t.store:
        if r["t"] >= at:
            break
        if r["conn"] == "lab" or not changes(r) or r["cmd"] in ("EVAL", "EVALSHA"):
            continue
        # A record without the sends' ids (written before they were kept): every send of its turns.
        carried = set(r["ids"]) if "ids" in r else {s.id for s in t.sends if s.turn in r["user"]}
        if r["cmd"] in ADDS:
            users |= set(r["user"])
            ids |= carried
            replies |= set(r["reply"])
        elif r["cmd"] in REPLACES:
            users, ids, replies = set(r["user"]), carried, set(r["reply"])
        elif r["cmd"] in REMOVES:
            users, ids, replies = set(), set(), set()
        elif r["cmd"] in TAKES_OUT:
            return None
    placed = {turn for turn, (_, reply) in first_writes(t).items() if reply is not None and reply < at}
    turns = users & replies & placed
    return turns, {s.id for s in t.sends if s.id in ids and s.turn in turns}


def read_began(t: Trial) -> float | None:
    """When the page's read after the refresh left (epoch s), or an earlier bound of it; None
    where the trial does not know (an after_ack reload whose request was never timed: its
    mark is the answer's, which may come after the read left)."""
    mark = next((float(e["t"]) for e in t.events if e.get("kind") == "refresh"), None)
    if mark is None or (t.refresh == "after_ack" and t.refresh_delay_ms is None):
        return None
    return mark


def read_window(t: Trial, until: float) -> tuple[float, float] | None:
    """From the refresh to the end of its phase (else ``until``): when the page's read after it
    was made. None: no refresh."""
    mark = next((float(e["t"]) for e in t.events if e.get("kind") == "refresh"), None)
    if mark is None:
        return None
    end = next((float(e["t"]) for e in t.events if e.get("kind") == "phase" and float(e["t"]) > mark), until)
    return mark, end


def key_read_in_window(t: Trial) -> bool | None:
    """Whether the app read the conversation's key (any command that changes nothing) while
    the page's read after the refresh was made; None: no record, or no refresh."""
    window = read_window(t, float("inf"))
    if window is None or t.store is None:
        return None
    lo, hi = window
    return any(lo <= r["t"] <= hi and r["conn"] != "lab" and not changes(r) for r in t.store)


def held_before_read(t: Trial, missing: list[int]) -> list[int]:
    """Of the turns the page after the refresh did not show, those Redis held (by the record)
    from before the page's read left -- by more than the clock grain -- until that read had
    ended: a removal in between (a rewrite's DEL a reload landed behind) may have emptied the
    key for the read, which then says nothing of a copy."""
    began = read_began(t)
    if began is None:
        return []
    at = began - CLOCK_GRAIN_S
    ended = (read_window(t, began) or (began, began))[1]
    held = held_at(t, at)
    for r in t.store or []:
        if held and at <= r["t"] <= ended and r["conn"] != "lab" and changes(r):
            after = held_at(t, r["t"] + 1e-6)
            held = held & after if after is not None else None
    return sorted(set(missing) & held) if held else []


def carries(blob: bytes, text: str) -> bool:
    """The value holds the text as it is, or as a JSON string holds it: an app that stores
    json.dumps(row) escapes a reply's quotes and backslashes (and, by default, every non-ASCII
    letter as \\uXXXX) -- a model's reply quoting the user was not found in its own row."""
    forms = {text.encode(), json.dumps(text)[1:-1].encode(), json.dumps(text, ensure_ascii=False)[1:-1].encode()}
    return any(f in blob for f in forms)


def list_side(trials: list[Trial]) -> str | None:
    """Where the app puts each new row of its list, by the record of ``trials``: "head" (every
    append an LPUSH: the list lies newest first), "tail" (every one an RPUSH: oldest first);
    None where it cannot say (no record, no list append, or both kinds)."""
    kinds = {r["cmd"] for t in trials for r in t.store or [] if r["conn"] != "lab" and r["cmd"] in APPENDS}
    if kinds and kinds <= {"LPUSH", "LPUSHX"}:
        return "head"
    if kinds and kinds <= {"RPUSH", "RPUSHX"}:
        return "tail"
    return None
