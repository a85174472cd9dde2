"""The store's record against the answers (lab.model.store) and the diagnosis drawn from it
(stored_after_answer): only a write that reached Redis after the browser had the answer
counts, a repeated reply is placed by time, and a stale read it explains is not a second cause."""

from __future__ import annotations

from typing import Any

from lab import diagnoses as dg
from lab.model.history import Row, Send, Trial
from lab.model.store import (
    CLOCK_GRAIN_S,
    comparable,
    filled_on_miss,
    first_writes,
    held_at,
    held_before_read,
    interleaved_rewrites,
    never_written,
    rewrite_gaps,
    stored_late,
)

T0 = 1_800_000_000.0


def _send(turn: int, answered: float, reply: str | None = None, cut: bool | None = None, text: str = "") -> Send:
    s = Send(f"t{turn}", text or f"probe turn {turn}", turn, reply=reply or f"reply {turn}", cut=cut)
    s.complete("ok", 200, "", T0 + answered)
    return s


def _w(at: float, user: list[int] = [], reply: list[int] = [], conn: str = "c1", cmd: str = "RPUSH") -> dict[str, Any]:  # noqa: B006
    return {"t": T0 + at, "conn": conn, "cmd": cmd, "args": [], "write": cmd != "LRANGE", "user": user, "reply": reply}


def _rows(n: int) -> list[Row]:
    return [
        r for i in range(1, n + 1) for r in (Row("", "user", f"probe turn {i}"), Row("", "assistant", f"reply {i}"))
    ]


def _trial(tid: str, sends: list[Send], store: list[dict[str, Any]] | None, **kw: Any) -> Trial:
    rows = _rows(len(sends))
    kw.setdefault("page_after_refresh", rows)
    return Trial(tid, sends=sends, final_rows=rows, turns=len(sends), store=store, history_reads=[200], **kw)


AWAITED = [_w(0.9, user=[1], reply=[1]), _w(1.9, user=[2], reply=[2])]  # one command, before each answer
LATE = [_w(0.99, user=[1]), _w(1.30, reply=[1]), _w(1.99, user=[2]), _w(2.30, reply=[2])]  # replies 300 ms late


def test_awaited_writes_are_never_late_and_late_ones_are_measured() -> None:
    sends = [_send(1, 1.0), _send(2, 2.0)]
    assert comparable(_trial("a", sends, AWAITED)) == [1, 2] and stored_late(_trial("a", sends, AWAITED)) == {}
    assert stored_late(_trial("b", sends, LATE)) == {1: 300.0, 2: 300.0}
    # Within the clock grain after the answer: not told apart from an awaited write.
    grain = [_w(1.0 + CLOCK_GRAIN_S / 2, user=[1], reply=[1])]
    assert stored_late(_trial("c", [_send(1, 1.0)], grain)) == {}


def test_a_repeated_reply_is_placed_by_the_turns_own_window() -> None:
    """Every reply reads "Sure!": turn 2's reply is the first write of it from turn 2's user
    row on, not turn 1's (earlier) nor turn 3's rewrite of both (later)."""
    sends = [_send(1, 1.0, "Sure!"), _send(2, 2.0, "Sure!"), _send(3, 3.0, "Sure!")]
    store = [
        _w(0.9, user=[1]),
        _w(0.95, reply=[1, 2, 3]),
        _w(1.9, user=[2]),
        _w(2.2, reply=[1, 2, 3]),  # turn 2's reply, 200 ms after its answer
        _w(2.9, user=[1, 2, 3], reply=[1, 2, 3], cmd="SET"),  # turn 3 rewrites the whole document
    ]
    assert first_writes(_trial("a", sends, store)) == {
        1: (T0 + 0.9, T0 + 0.95),
        2: (T0 + 1.9, T0 + 2.2),
        3: (T0 + 2.9, T0 + 2.9),
    }
    assert stored_late(_trial("a", sends, store)) == {2: 200.0}


def test_what_the_record_cannot_judge() -> None:
    # A cut answer never ended; the lab's own reads and non-writes are no writes; no record.
    cut = _trial("a", [_send(1, 1.0, cut=True)], [_w(1.5, user=[1], reply=[1])])
    lab = _trial("b", [_send(1, 1.0)], [_w(1.5, user=[1], conn="lab")])
    read = _trial("c", [_send(1, 1.0)], [_w(1.5, user=[1], cmd="LRANGE")])
    for t in (cut, lab, read, _trial("d", [_send(1, 1.0)], None)):
        assert comparable(t) == [] and stored_late(t) == {}, t.trial_id


def test_a_double_submit_is_judged_by_its_later_answer() -> None:
    """The same message twice: the app answers the duplicate at once while the first write is
    under way -- the turn was acknowledged (first) after it was written."""
    first, dup = _send(1, 1.0, text="same"), _send(1, 0.5, text="same")
    assert stored_late(_trial("a", [first, dup], [_w(0.9, user=[1], reply=[1])])) == {}


def test_stored_after_answer_is_drawn_with_its_rate_and_explains_the_stale_read() -> None:
    sends = [_send(1, 1.0), _send(2, 2.0)]
    stale_page = _rows(1)  # the page right after the refresh misses turn 2 (stored 300 ms late)
    late = _trial("late", sends, LATE, page_after_refresh=stale_page, refresh="after_ack")
    ok = _trial("ok", [_send(1, 1.0), _send(2, 2.0)], AWAITED)
    found = {d.code: d for d in dg.diagnose([late, ok])}
    assert set(found) == {"stored_after_answer"}, found
    d = found["stored_after_answer"]
    assert (d.k, d.n, d.trials) == (1, 2, ["late"]) and "300 ms after its answer" in d.evidence, d
    # The same stale page with every write awaited is a stale read (a cache), nothing else.
    cached = _trial(
        "cached", [_send(1, 1.0), _send(2, 2.0)], AWAITED, page_after_refresh=stale_page, refresh="after_ack"
    )
    assert [d.code for d in dg.diagnose([cached])] == ["stale_reads"]
    # ... and with the time its read left, a copy: the key had held turn 2 for 300 ms by then.
    cached.events, cached.refresh_delay_ms = [{"t": T0 + 2.2, "kind": "refresh"}], 200.0
    found = {d.code: d for d in dg.diagnose([cached, ok])}
    assert set(found) == {"history_from_copy"}, found
    d = found["history_from_copy"]
    assert (d.k, d.n) == (1, 1) and "turn 2 had been in Redis 300 ms when the page's read left" in d.evidence, d
    # The record has no read of the key while the page read: answered without it (memory).
    assert "no command on the key while the page read" in d.evidence, d
    cached.store = [*AWAITED, _w(2.25, cmd="LRANGE")]  # ... and with one: a copy after the read
    (d,) = dg.diagnose([cached, ok])
    assert d.code == "history_from_copy" and "no command on the key" not in d.evidence, d
    # Without a record: not judged, and said why.
    _, not_judged = dg.run([_trial("none", sends, None)])
    assert not_judged["stored_after_answer"] == "needs store in one trial"


def _fallback(tid: str, store: list[dict[str, Any]], stored: list[int], **kw: Any) -> Trial:
    """Three turns answered 200, all three in the settled history; turn 2 sent while Redis was down."""
    sends = [_send(1, 1.0), _send(2, 2.0), _send(3, 3.0)]
    sends[1].under_fault = True
    key = {"key": "conv:x", "type": "list", "pttl_ms": 1000, "values": 2 * len(stored), "stored_turns": stored}
    return _trial(tid, sends, store, redis_final=key, fault="down", **kw)


WRITTEN_1_3 = [_w(0.9, user=[1], reply=[1]), _w(2.9, user=[3], reply=[3])]


def test_a_turn_shown_that_redis_never_received_is_served_from_elsewhere() -> None:
    t = _fallback("mem", WRITTEN_1_3, stored=[1, 3])
    assert never_written(t) == {2}
    (d,) = dg.diagnose([t])
    assert (
        d.code == "shown_not_stored" and "turns [2]" in d.evidence and "sent while Redis was faulted" in d.evidence
    ), d
    # Written under another key (a key the lab did not read): not "never stored".
    moved = _fallback("moved", WRITTEN_1_3, stored=[1, 3], store_elsewhere=[{"turn": 2, "key": "conv:y"}])
    assert never_written(moved) == set() and codes_of([moved]) == []
    # The key holds it (written before the trial's record began, say): stored.
    assert never_written(_fallback("held", WRITTEN_1_3, stored=[1, 2, 3])) == set()
    # The app's writes carry no text the lab can search (compressed, encrypted): no claim at all.
    opaque = [_w(0.9), _w(2.9)]
    assert (
        never_written(_fallback("opaque", opaque, stored=[])) is None
        and codes_of([_fallback("o", opaque, stored=[])]) == []
    )


def codes_of(trials: list[Trial]) -> list[str]:
    return [d.code for d in dg.diagnose(trials)]


def _rw(at: float, cmd: str, user: list[int] = [], value: str = "", atomic: bool = False) -> dict[str, Any]:  # noqa: B006
    row = _w(at, user=user, cmd=cmd)
    row.update(write=cmd == "RPUSH", atomic=atomic, value=value or f"v{at}")
    return row


# Turn 1 stored and answered (1.0); turn 2's write deletes the key and pushes turn 1 back 300 ms later.
REWRITE = [_rw(0.9, "RPUSH", [1], "u1"), _rw(1.9, "DEL"), _rw(2.2, "RPUSH", [1], "u1"), _rw(2.5, "RPUSH", [2], "u2")]


def test_a_rewrite_that_deletes_acknowledged_rows_leaves_a_gap() -> None:
    sends = [_send(1, 1.0), _send(2, 2.6)]
    t = _trial("rw", sends, REWRITE)
    assert rewrite_gaps(t) == {1: 300.0} and not interleaved_rewrites(t)
    (d,) = dg.diagnose([t])
    assert d.code == "rewrite_window" and "written back 300 ms later" in d.evidence, d
    # In a MULTI (or a script) nobody sees the gap; a turn not yet acknowledged had no row to lose.
    atomic = [dict(r, atomic=True) if r["cmd"] == "DEL" else r for r in REWRITE]
    assert rewrite_gaps(_trial("tx", sends, atomic)) == {}
    assert rewrite_gaps(_trial("early", [_send(1, 2.0), _send(2, 2.6)], REWRITE)) == {}


def test_rewrites_that_overlap_push_a_value_back_twice() -> None:
    """Two tabs' rewrites on one multiplexed connection: both read [u1], both delete, both push
    u1 back -- the duplicate is the rewrite's shape, not another cause's."""
    sends = [_send(1, 1.0), _send(2, 2.6)]
    store = [*REWRITE[:2], _rw(1.95, "DEL"), _rw(2.2, "RPUSH", [1], "u1"), _rw(2.3, "RPUSH", [1], "u1")]
    assert interleaved_rewrites(_trial("two", sends, store)) and not interleaved_rewrites(_trial("one", sends, REWRITE))


def test_two_tabs_rewriting_at_once_are_overlapping_rewrites() -> None:
    """Two sends in flight together, each deleting and rewriting: whatever the key ends as
    (here: no value written twice) is the rewrites' doing."""
    a, b = _send(1, 2.0), _send(2, 2.1)
    a.t_invoke, b.t_invoke = T0 + 1.0, T0 + 1.05
    store = [_rw(1.2, "DEL"), _rw(1.3, "RPUSH", [1], "u1"), _rw(1.4, "DEL"), _rw(1.5, "RPUSH", [2], "u2")]
    assert interleaved_rewrites(_trial("tabs", [a, b], store))
    b.t_invoke = T0 + 2.05  # one after the other: two rewrites, not overlapping
    assert not interleaved_rewrites(_trial("seq", [a, b], store))


def test_what_the_key_held_follows_appends_whole_values_and_removals() -> None:
    """Appends add, a whole-value SET replaces, a DEL empties; a trim makes the record unable
    to say; a script's line itself is nothing (its commands follow); a turn whose reply is not
    written yet is not held (write_after_answer: the user's row lands first)."""
    sends = [_send(1, 1.0), _send(2, 2.0)]
    rows = [
        _w(0.9, user=[1], reply=[1]),
        _w(1.0, cmd="DEL"),
        _w(1.1, user=[1], reply=[1]),
        _w(1.8, user=[1, 2], reply=[1], cmd="SET"),
        _w(1.9, user=[1, 2], reply=[1, 2], cmd="SET"),
    ]
    t = _trial("h", sends, rows)
    assert held_at(t, T0 + 0.95) == {1} and held_at(t, T0 + 1.05) == set()
    assert held_at(t, T0 + 1.85) == {1} and held_at(t, T0 + 2.0) == {1, 2}
    t.store = sorted([*rows, _w(0.5, cmd="EVAL"), _w(2.1, cmd="LTRIM")], key=lambda r: r["t"])
    assert held_at(t, T0 + 2.0) == {1, 2} and held_at(t, T0 + 2.2) is None
    assert held_at(_trial("n", sends, None), T0 + 3) is None


def test_a_turn_written_after_the_read_left_or_at_its_grain_is_not_held_before_it() -> None:
    sends = [_send(1, 1.0), _send(2, 2.0)]
    t = _trial("r", sends, AWAITED, refresh="settled", events=[{"t": T0 + 1.9 + CLOCK_GRAIN_S / 2, "kind": "refresh"}])
    assert held_before_read(t, [1, 2]) == [1]  # turn 2 within the grain of the read: not told apart
    t.events = [{"t": T0 + 2.5, "kind": "refresh"}]
    assert held_before_read(t, [2]) == [2]
    t.refresh, t.refresh_delay_ms = "after_ack", None  # a reload never timed: its mark may be late
    assert held_before_read(t, [2]) == []


def test_a_turn_whose_reply_lands_after_the_read_left_is_not_held_before_it() -> None:
    """write_after_answer: the user's row 80 ms before the reload's read, the reply's 220 ms
    after it -- the page lacking the turn is the late write's doing, not a copy's."""
    t = _trial(
        "w", [_send(1, 1.0), _send(2, 2.0)], LATE, refresh="settled", events=[{"t": T0 + 2.07, "kind": "refresh"}]
    )
    assert held_before_read(t, [2]) == []
    assert [d.code for d in dg.diagnose([t])] == ["stored_after_answer"]


def test_a_reload_just_behind_a_rewrites_delete_is_no_copy() -> None:
    """in_flight: the reload left 5 ms after turn 2's DEL (the record marks a removal as no write
    of a value), its read came back empty while the rows were pushed back one by one. Turn 1 was
    in Redis long before the mark, but not through the read: the rewrite's gap, not a copy."""
    sends = [_send(1, 1.0), _send(2, 2.6)]
    sends[1].outcome, sends[1].status = "info", None  # the reloaded send: aborted, unacknowledged
    store = [
        _w(0.9, user=[1]),
        _w(0.95, reply=[1]),
        {**_w(1.9, cmd="DEL"), "write": False},
        _w(2.2, user=[1]),
        _w(2.3, reply=[1]),
        _w(2.5, user=[2]),
    ]
    events = [{"t": T0 + 1.905, "kind": "refresh"}, {"t": T0 + 2.4, "kind": "phase", "phase": "send"}]
    t = _trial("mid", sends, store, refresh="in_flight", events=events, page_after_refresh=[], fault="latency")
    assert held_at(t, T0 + 1.895) == {1} and held_at(t, T0 + 1.95) == set()
    assert held_before_read(t, [1]) == []
    assert codes_of([t]) == ["rewrite_window"]
    # Nothing removed between the read's leaving and its end: a page without turn 1 is a copy's.
    t2 = _trial("copy", sends, store[:2], refresh="in_flight", events=events, page_after_refresh=[])
    assert held_before_read(t2, [1]) == [1]


def _rewrite(tid: str, gap_s: float, **kw: Any) -> Trial:
    """Turn 1 stored and answered; turn 2's write deletes the key at 1.9 and pushes turn 1 back
    ``gap_s`` later."""
    store = [_rw(0.9, "RPUSH", [1], "u1"), _rw(1.9, "DEL"), _rw(1.9 + gap_s, "RPUSH", [1], "u1")]
    store.append(_rw(1.9 + gap_s + 0.0001, "RPUSH", [2], "u2"))
    return _trial(tid, [_send(1, 1.0), _send(2, 2.6)], store, **kw)


def test_a_rewrites_gap_counts_where_it_is_no_pipelines() -> None:
    """A pipeline (no MULTI) runs back to back: its gap is microseconds, and an awaited step's on
    a fast link is under the clock's grain too. The latency fault tells them apart: it stretches
    awaited steps and leaves a pipeline's commands together."""
    lat = {"fault": "latency", "fault_params": {"latency_ms": 300}}
    # Latency trials whose gaps stayed under the grain: a pipeline -- nothing drawn from any trial.
    piped = [_rewrite("p1", 0.0001, **lat), _rewrite("p2", 0.00005, **lat), _rewrite("p3", 0.0002)]
    assert "rewrite_window" not in codes_of(piped)
    # Stretched by the latency: awaited one by one -- every gap counts, the fault-free ones too.
    awaited = [_rewrite("a1", 0.6, **lat), _rewrite("a2", 0.0008)]
    d = next(d for d in dg.diagnose(awaited) if d.code == "rewrite_window")
    assert (d.k, d.n) == (2, 2), d
    # No latency trial: a gap from the grain up counts; one under it tells nothing (out of n).
    plain = [_rewrite("n1", 0.05), _rewrite("n2", 0.0008)]
    d = next(d for d in dg.diagnose(plain) if d.code == "rewrite_window")
    assert (d.k, d.n) == (1, 1) and "n1" in d.evidence, d
    assert "rewrite_window" not in codes_of([_rewrite("n2", 0.0008)])


def _cached(tid: str, store: list[dict[str, Any]]) -> Trial:
    """Three turns answered at 1, 2, 3; the page after the refresh (at 3.5) shows them all."""
    return _trial(tid, [_send(1, 1.0), _send(2, 2.0), _send(3, 3.0)], store, refresh="settled")


def test_a_cache_filled_on_a_miss_is_no_late_write_nor_a_rewrite() -> None:
    """A cache in front of a database: each send deletes the key, the next read misses and fills
    it whole (both sides of every turn answered before it) -- the turns were stored elsewhere,
    so the fill says neither when they were stored nor that a rewrite put them back."""
    fill = _w(3.6, user=[1, 2, 3], reply=[1, 2, 3], conn="c2", cmd="SET")
    fill["args"] = ["hist:x", "[...]", "EX", "60"]  # the copy's TTL, set once with the one write: nothing to renew
    store = [_w(0.99, cmd="DEL"), _w(1.99, cmd="DEL"), _w(2.99, cmd="DEL"), _w(3.55, conn="c1", cmd="GET"), fill]
    for row in store[:4]:
        row["write"] = False  # a removal and a read write no value
    t = _cached("cache", store)
    assert filled_on_miss(t) == [fill]
    assert stored_late(t) == {} and rewrite_gaps(t) == {} and comparable(t) == []
    assert codes_of([t, _cached("cache2", store)]) == []
    # The same write with no read before it (a write behind the answers), or carrying one side
    # of the turns, or after a read that found the key there: a store's write, judged as before.
    late = _cached("late", [s for s in store if s["cmd"] != "GET"])
    assert filled_on_miss(late) == [] and stored_late(late)
    half = [*store[:4], _w(3.6, user=[1, 2, 3], reply=[], cmd="SET")]
    assert filled_on_miss(_cached("half", half)) == []
    present = [_w(0.5, user=[], cmd="SET"), *store[3:]]
    assert filled_on_miss(_cached("present", present)) == []


def test_readers_that_missed_together_fill_the_cache_one_after_another() -> None:
    """A page's reload and a second read of the history at once both miss, and both fill the
    key with the same copy (seen 2026-12-05 in the cache-aside e2e: the second fill, not taken
    for one, drew stored_after_answer 1656 ms late). A different value after a fill, or the same
    one after a removal, is a write judged as before."""

    def fill(at: float, conn: str, value: str = "v1") -> dict[str, Any]:
        w = _w(at, user=[1, 2, 3], reply=[1, 2, 3], conn=conn, cmd="SET")
        w["value"] = value
        return w

    reads = [_w(0.99, cmd="DEL"), _w(1.99, cmd="DEL"), _w(2.99, cmd="DEL"), _w(3.55, conn="c2", cmd="GET")]
    reads.append(_w(3.551, conn="c2", cmd="GET"))
    for row in reads:
        row["write"] = False
    both = [*reads, fill(3.552, "c1"), fill(3.554, "c4")]
    t = _cached("twice", both)
    assert filled_on_miss(t) == both[-2:] and stored_late(t) == {} and comparable(t) == []
    assert codes_of([t, _cached("twice2", both)]) == []
    other = [*reads, fill(3.552, "c1"), fill(3.554, "c4", value="v2")]
    assert filled_on_miss(_cached("other", other)) == other[-2:-1]
    removed = [*reads, fill(3.552, "c1"), _w(3.553, cmd="DEL"), fill(3.554, "c4")]
    removed[-2]["write"] = False
    assert filled_on_miss(_cached("removed", removed)) == removed[-3:-2]


def _elsewhere(tid: str, other: str, own_read: bool = False) -> Trial:
    """Turns 1-2 stored and answered; the page after the refresh (at 3.0) showed nothing while
    the app read ``other`` -- and its own key too, with ``own_read``."""
    sends = [_send(1, 1.0), _send(2, 2.0)]
    store = [*AWAITED] + ([_w(3.02, cmd="LRANGE")] if own_read else [])
    events = [{"t": T0 + 3.0, "kind": "refresh"}, {"t": T0 + 3.5, "kind": "phase", "phase": "refresh"}]
    t = _trial(tid, sends, store, refresh="settled", events=events, page_after_refresh=[])
    t.redis_final = {"key": f"conv:{tid}", "pttl_ms": 1000, "stored_turns": [1, 2]}
    t.store_other_reads = [{"t": T0 + 3.02, "key": other, "cmd": "LRANGE"}]
    return t


def test_a_page_read_from_a_key_no_conversation_owns_is_another_identity() -> None:
    """The store's record of the page's read after the refresh: the conversation's key not read,
    a key of its shape read instead that no trial of the run owns -- the read path's identity,
    not a copy (history_from_copy) nor a stale read."""
    ds = dg.diagnose([_elsewhere("a", "conv:fresh"), _elsewhere("b", "conv:fresh2")])
    assert [(d.code, d.k, d.n) for d in ds] == [("history_from_another_key", 2, 2)], ds
    assert "read conv:fresh, a key the app never wrote in the run, and not conv:a" in ds[0].evidence
    # Another trial's own conversation read at the same time: a concurrent trial's, says nothing.
    assert "history_from_another_key" not in codes_of([_elsewhere("a", "conv:b"), _elsewhere("b", "conv:a")])
    # A key of that shape the app writes (an index, a counter): read on the way, not another identity.
    indexed = [_elsewhere("a", "conv:ids"), _elsewhere("b", "conv:ids")]
    for t in indexed:
        assert t.store_other_reads is not None
        t.store_other_reads[0]["written"] = True
    assert "history_from_another_key" not in codes_of(indexed)
    # The conversation's own key read too: the read path found it -- whatever hid the turns, not this.
    assert "history_from_another_key" not in codes_of([_elsewhere("a", "conv:fresh", own_read=True)])


def test_a_session_cookie_lost_at_a_browser_restart_is_no_other_identity() -> None:
    """A session-only cookie (Flask's and express-session's default) lost at a browser restart:
    the page reads under a new session -- another key of the shape, empty. The cookie's doing
    (session_cookie, which claims no loss), not a read path looking under another identity."""
    restarted = [_elsewhere("a", "conv:fresh"), _elsewhere("b", "conv:fresh2")]
    for t in restarted:
        t.refresh, t.cookie_persistent = "browser_restart", False
    assert "history_from_another_key" not in codes_of(restarted)
    for t in restarted:
        t.cookie_persistent = True  # the cookie kept, and still another key read: the read path
    assert "history_from_another_key" in codes_of(restarted)


def test_a_read_of_a_key_that_holds_something_or_a_page_showing_some_turns_is_not_another_identity() -> None:
    """What else leaves a read of another key of the conversation's shape while its own is not
    read: a history served from memory (a cache, a worker's copy) on a page that also reads a key
    set up before the run (a `conv:config` read on every page). That key holds something (the
    final read's ``held``); an empty conversation holds nothing. And an empty key can only give an
    empty page: a page showing some of the acknowledged turns got them elsewhere."""
    config = [_elsewhere("a", "conv:config"), _elsewhere("b", "conv:config")]
    for t in config:
        assert t.store_other_reads is not None
        t.store_other_reads[0]["held"] = True
    assert "history_from_another_key" not in codes_of(config)
    empty = [_elsewhere("a", "conv:fresh"), _elsewhere("b", "conv:fresh2")]
    for t in empty:
        assert t.store_other_reads is not None
        t.store_other_reads[0]["held"] = False
    assert "history_from_another_key" in codes_of(empty)
    partial = [_elsewhere("a", "conv:fresh"), _elsewhere("b", "conv:fresh2")]
    for t in partial:
        t.page_after_refresh = _rows(1)  # turn 1 shown, turn 2 missing: a stale copy's shape
    assert "history_from_another_key" not in codes_of(partial)
    # Not a read of a conversation: a channel, a pattern, a flag's check, a string beside a list.
    for cmd in ("SUBSCRIBE", "KEYS", "EXISTS", "GET"):
        others = [_elsewhere("a", "conv:events"), _elsewhere("b", "conv:events")]
        for t in others:
            assert t.store_other_reads is not None and t.redis_final is not None
            t.redis_final["type"] = "list"
            t.store_other_reads[0]["cmd"] = cmd
        assert "history_from_another_key" not in codes_of(others), cmd


def test_one_trial_is_a_sighting_not_a_rate() -> None:
    """No rate from one trial of one experiment: a diagnosis drawn from a single judged trial
    says so and asks for more trials; from two on, k/n with its Wilson interval."""
    assert dg.rate_words(1, 1) == dg.ONE_TRIAL and "no rate" in dg.ONE_TRIAL and "--trials 3" in dg.ONE_TRIAL
    assert dg.rate_words(1, 2) == "1/2 trials [0.09, 0.91]"
    (d,) = dg.diagnose([_trial("rw", [_send(1, 1.0), _send(2, 2.6)], REWRITE)])
    assert d.k == d.n == 1 and dg.rate_words(d.k, d.n) == dg.ONE_TRIAL
