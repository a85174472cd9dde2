"""Where the app keeps a message: every key, in every db of a Redis, whose values carry its text
-- and what that says of the spec's [redis] key once the contract check's message is shown.

A [redis] key that holds nothing of an acknowledged message the history shows leaves every rule
read from the key blind without a word (its TTL, its record), and worse: a key read as absent
looks like one that expired. An app chooses its db itself (a URL's path, a `db=` in its code), so
the lab's Redis is searched whole: it holds only what this run made the app write.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import redis

from lab.investigate.evidence.keys import CLIENT_NAME, MOST_KEYS, KeyReader
from lab.investigate.evidence.store import StoreMonitor
from lab.model.store import carries

SHOWN_HOLDERS = 3  # keys named in a message about where the text was found


@dataclass(frozen=True)
class Holder:
    db: int
    key: str


def with_db(url: str, db: int) -> str:
    """``url`` (its login kept) naming db ``db``."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{db}"))


def db_of(url: str) -> int:
    return int(urlsplit(url).path.strip("/") or 0)


def holders(url: str, text: str) -> list[Holder]:
    """Every key whose values carry ``text``, in every db of the Redis at ``url`` that holds
    keys (INFO keyspace), logged in as ``url``; at most MOST_KEYS keys a db are looked at."""
    r = redis.Redis.from_url(url, socket_timeout=5, retry=None, client_name=CLIENT_NAME)
    try:
        dbs = sorted(int(name[2:]) for name in r.info("keyspace"))
    except redis.RedisError:  # an app's own Redis may refuse INFO to its user (an ACL): its db only
        dbs = [db_of(url)]
    finally:
        r.close()
    out: list[Holder] = []
    for db in dbs:
        reader = KeyReader(with_db(url, db))
        try:
            names = reader.scan(MOST_KEYS)
            out += [Holder(db, k) for k in names if any(carries(v, text) for v in reader.read(k)[2])]
        except redis.RedisError:  # a db the login may not read (SELECT or SCAN refused): not searched
            continue
        finally:
            reader.close()
    return out


@dataclass(frozen=True)
class KeyVerdict:
    """What the contract check's message says of [redis] key: ``use_db``, the db the lab should
    read instead (the key named is there); ``error``, a spec that names no key the app writes;
    ``note``, a doubt said beside the contract line."""

    use_db: int | None = None
    error: str | None = None
    note: str | None = None


def judge(template: str, key: str, record: dict[str, object], turn: int, db: int, found: list[Holder]) -> KeyVerdict:
    """The spec's key (``template``, read as ``key`` in db ``db``; ``record``: its final read in
    the contract's trial) against where the message of ``turn`` is (``found``)."""
    if turn in (record.get("stored_turns") or []):  # type: ignore[operator]
        return KeyVerdict()
    elsewhere = [h for h in found if h.key == key and h.db != db]
    if elsewhere:
        return KeyVerdict(use_db=elsewhere[0].db)
    named = ", ".join(f"{h.key!r} (db {h.db})" for h in found[:SHOWN_HOLDERS]) + (
        f" and {len(found) - SHOWN_HOLDERS} more" if len(found) > SHOWN_HOLDERS else ""
    )
    if record.get("type") == "none" and found:
        return KeyVerdict(
            error=f"[redis] key = {template!r} names no key the app wrote: after the contract's send "
            f"it read {key!r} (db {db}), absent, while the message is under {named}"
        )
    if found:
        return KeyVerdict(
            note=f"[redis] key {key!r} holds nothing of the message just sent; it is under {named} "
            "-- if that is the conversation, name it in [redis] key"
        )
    if record.get("type") == "none":
        return KeyVerdict(
            note=f"no key in the Redis holds the message the history shows ({key!r} is absent): the "
            "history comes from elsewhere (a copy, another store); the key's rules will find nothing to read"
        )
    return KeyVerdict(
        note=f"[redis] key {key!r} holds {record.get('values')} value(s), none carrying the message "
        "as text (compressed or encoded?); no other key does either"
    )


def follow(
    keys: KeyReader, store: StoreMonitor | None, template: str, record: dict[str, object], turn: int, text: str
) -> KeyVerdict:
    """``judge`` of the key read (``record``) against a search for ``text`` (turn ``turn``'s
    message) -- made only where the key does not hold that turn -- and, where the key named is in
    another db, ``keys`` and ``store`` re-pointed there: read and followed there from now on."""
    if turn in (record.get("stored_turns") or []):  # type: ignore[operator]
        return KeyVerdict()
    url = keys.redis_url
    v = judge(template, str(record.get("key")), record, turn, db_of(url), holders(url, text))
    if v.use_db is not None:
        keys.use_url(with_db(url, v.use_db))
        if store is not None:
            store.db = v.use_db
    return v
