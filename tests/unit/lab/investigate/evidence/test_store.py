"""MONITOR's lines as the store's record reads them: time, db, connection and the arguments
unquoted byte for byte; the keys a command names."""

from __future__ import annotations

import pytest

from lab.investigate.evidence.store import StoreMonitor, _keys, key_shape
from lab.common.redis_follow import parse_monitor_line


def test_a_monitor_line_unquoted() -> None:
    line = rb'1796253954.874050 [3 127.0.0.1:44544] "RPUSH" "conv:x" "say \"hi\"\n \xc3\xa9 \\ end"'
    t, db, client, args = parse_monitor_line(line) or (0.0, 0, "", [])
    assert (t, db, client) == (1796253954.87405, 3, "127.0.0.1:44544")
    assert args == [b"RPUSH", b"conv:x", 'say "hi"\n é \\ end'.encode()]
    assert parse_monitor_line(rb'1796253954.874684 [0 lua] "RPUSH" "k" "v"') == (
        1796253954.874684,
        0,
        "lua",
        [b"RPUSH", b"k", b"v"],
    )
    assert parse_monitor_line(b"OK") is None


def test_the_keys_a_command_names() -> None:
    assert _keys([b"RPUSH", b"k", b"v"]) == [b"k"]
    assert _keys([b"EVAL", b"script", b"2", b"k1", b"k2", b"arg"]) == [b"k1", b"k2"]
    assert _keys([b"evalsha", b"sha", b"0", b"arg"]) == []
    assert _keys([b"MSET", b"a", b"1", b"b", b"2"]) == [b"a", b"b"] and _keys([b"DEL", b"a", b"b"]) == [b"a", b"b"]
    # A list built aside and swapped in, a value moved over: the destination is changed too.
    assert _keys([b"RENAME", b"conv:1:tmp", b"conv:1"]) == [b"conv:1:tmp", b"conv:1"]
    assert _keys([b"LMOVE", b"q", b"conv:1", b"LEFT", b"RIGHT"]) == [b"q", b"conv:1"]


def test_a_text_is_found_as_stored_or_as_a_json_string_holds_it() -> None:
    import json

    from lab.model.store import carries

    reply = 'Turn 2 as I see it. You first said "Grüße..."; \\ done'
    for stored in (reply, json.dumps({"content": reply}), json.dumps({"c": reply}, ensure_ascii=False)):
        assert carries(stored.encode(), reply), stored
    assert not carries(json.dumps({"content": "Turn 2 as I see it."}).encode(), reply)


T0 = 1_800_000_000.0


def test_the_reads_of_other_keys_of_the_conversations_shape_while_the_page_read() -> None:
    """fill's other reads (lab.investigate.evidence.store.reads_elsewhere): the app's reads of
    keys the spec's pattern matches with another id, in the window -- not writes, not the lab's,
    not keys of another shape."""
    m = StoreMonitor("redis://127.0.0.1:1/0")  # never started: commands handed to it as MONITOR would
    m.lab_clients.add("127.0.0.1:9")
    for at, client, args in (
        (0.1, "127.0.0.1:5", [b"LRANGE", b"chat:other", b"0", b"-1"]),
        (0.2, "127.0.0.1:5", [b"RPUSH", b"chat:other", b"x"]),  # a write: not a read
        (0.3, "127.0.0.1:9", [b"LRANGE", b"chat:lab", b"0", b"-1"]),  # the lab's own
        (0.4, "127.0.0.1:5", [b"GET", b"session:abc"]),  # another shape: a session store
        (0.45, "127.0.0.1:5", [b"HGETALL", b"chat:a:meta"]),  # a sibling of the conversation's key
        (0.5, "127.0.0.1:5", [b"LRANGE", b"chat:a", b"0", b"-1"]),  # the conversation's own
        (2.0, "127.0.0.1:5", [b"LRANGE", b"chat:late", b"0", b"-1"]),  # outside the window
    ):
        m._command(T0 + at, 0, client, args)
    got = m.reads_elsewhere("chat:a", key_shape("chat:{session}"), T0, T0 + 1)
    assert got == [{"t": T0 + 0.1, "key": "chat:other", "cmd": "LRANGE", "written": True}]  # its RPUSH at 0.2


def test_every_dbs_commands_are_kept_and_the_record_read_is_the_db_the_app_writes() -> None:
    """The run may learn the app's db after its first writes (the contract check, a user's first
    test): the record read once ``db`` changes holds the commands that came before."""
    m = StoreMonitor("redis://127.0.0.1:1/0")  # never started: commands handed to it as MONITOR would
    m._command(T0 + 0.1, 3, "127.0.0.1:5", [b"RPUSH", b"chat:a", b"hello"])
    m._command(T0 + 0.2, 0, "127.0.0.1:5", [b"GET", b"chat:a"])
    on_0, _ = m.on("chat:a", T0, T0 + 1)
    assert on_0 is not None and [c.args[0] for c in on_0] == [b"GET"]
    m.db = 3
    on_3, _ = m.on("chat:a", T0, T0 + 1)
    assert on_3 is not None and [c.args for c in on_3] == [(b"RPUSH", b"chat:a", b"hello")]
    assert m.last_change("chat:a", T0 + 1) == (T0 + 0.1, False)


def test_another_dbs_keys_never_crowd_out_the_apps(monkeypatch: pytest.MonkeyPatch) -> None:
    """A busy cache in db 1 fills its own bound, not the conversations': a key not kept would
    read as a key never written."""
    from lab.investigate.evidence import store

    monkeypatch.setattr(store, "MAX_KEYS", 2)
    m = StoreMonitor("redis://127.0.0.1:1/0")
    for n in range(5):
        m._command(T0 + n / 10, 1, "127.0.0.1:5", [b"SET", f"cache:{n}".encode(), b"x"])
    m._command(T0 + 1, 0, "127.0.0.1:5", [b"RPUSH", b"chat:a", b"hello"])
    got, _ = m.on("chat:a", T0, T0 + 2)
    assert got is not None and len(got) == 1
