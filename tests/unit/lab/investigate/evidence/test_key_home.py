"""The contract check's reading of [redis] key (lab.investigate.evidence.key_home.judge): the
message in the key named is nothing to say; the same key in another db is that db to read; a
key named that is absent while another holds the message is a spec that names no key the app
wrote; a doubt where it cannot tell."""

from __future__ import annotations

from lab.investigate.evidence.key_home import Holder, KeyVerdict, db_of, judge, with_db

KEY = "conv:7f3a"


def _rec(kind: str = "list", stored: tuple[int, ...] = (), values: int = 2) -> dict[str, object]:
    return {"key": KEY, "type": kind, "values": values, "stored_turns": list(stored)}


def test_the_message_in_the_key_named_says_nothing_whatever_else_holds_it() -> None:
    assert judge("conv:{session}", KEY, _rec(stored=(1,)), 1, 0, [Holder(0, "index:all")]) == KeyVerdict()


def test_the_key_named_in_another_db_is_the_db_to_read() -> None:
    found = [Holder(0, "last:7f3a"), Holder(3, KEY)]
    assert judge("conv:{session}", KEY, _rec("none"), 1, 0, found) == KeyVerdict(use_db=3)


def test_an_absent_key_while_another_holds_the_message_is_a_spec_naming_no_key_the_app_wrote() -> None:
    v = judge("chat:{session}", "chat:7f3a", _rec("none"), 1, 0, [Holder(0, "conversation:7f3a:messages")])
    assert v.use_db is None and v.note is None and v.error
    assert "'chat:{session}'" in v.error and "'conversation:7f3a:messages' (db 0)" in v.error


def test_a_key_that_exists_without_the_message_is_only_a_doubt() -> None:
    # An app may keep a conversation's meta under the key the spec names and its rows elsewhere:
    # said beside the contract line, the run goes on.
    v = judge("conv:{session}", KEY, _rec("hash"), 1, 0, [Holder(0, "rows:7f3a")])
    assert v.error is None and v.use_db is None and v.note and "'rows:7f3a' (db 0)" in v.note


def test_no_key_holding_the_message_is_a_doubt_not_an_error() -> None:
    # A history served from a copy (the app's bug) leaves the same: never a contract error.
    absent = judge("conv:{session}", KEY, _rec("none"), 1, 0, [])
    encoded = judge("conv:{session}", KEY, _rec("string", values=1), 1, 0, [])
    assert absent.error is None and absent.note and "absent" in absent.note
    assert encoded.error is None and encoded.note and "encoded" in encoded.note


def test_many_holders_are_counted_not_all_named() -> None:
    found = [Holder(0, f"k{i}") for i in range(5)]
    v = judge("c:{session}", "c:1", _rec("none"), 1, 0, found)
    assert v.error and "'k2' (db 0) and 2 more" in v.error and "'k3'" not in v.error


def test_a_url_keeps_its_login_and_names_another_db() -> None:
    assert with_db("redis://:s3cret@127.0.0.1:6380/0", 4) == "redis://:s3cret@127.0.0.1:6380/4"
    assert db_of("redis://127.0.0.1:6380") == 0 and db_of("redis://h:1/7") == 7
