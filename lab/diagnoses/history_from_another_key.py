"""The history after the refresh was read from another key of the conversation's shape -- one
the app never wrote in the run and that holds nothing -- and not from the conversation's own,
and the page showed nothing: the read path looks the conversation up under another identity (a
cookie renamed in one route, an id taken from somewhere the send route does not use).

What else leaves a read of another key of that shape with the conversation's own unread: a
history served from memory (a cache, a worker's copy: history_from_copy's) on a page that also
reads a key set up before the run -- a greeting, a config. That key holds something, and a copy
usually shows some turns; an empty key can give only an empty page. What could still pass for
it: a history served empty from memory beside a read of another empty key of the shape."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, Judged, explained, few, ids, register
from lab.model.store import READS_BY_TYPE, VALUE_READS, key_read_in_window


def read_elsewhere(j: Judged, owned: set[str]) -> str | None:
    """The key the page's read after the refresh went to instead of the conversation's: a key
    of its shape that no trial of the run owns, read while the conversation's own was not."""
    if j.trial.store_other_reads is None or key_read_in_window(j.trial) is not False:
        return None
    # Never written by the app in the run, and holding nothing at the end of the trial: an empty
    # conversation -- not an index or a counter of the same shape (a `conv:ids` set a history
    # route checks before serving from memory), nor a key set up before the run and read on every
    # page (a `conv:config`), which would sit beside a history served from memory alike.
    # Read as the conversation's value is read (the read path's own read, made under another id):
    # not a channel (SUBSCRIBE conv:events), a pattern (KEYS conv:*), a flag's check (EXISTS), nor
    # a value of another type than the conversation's (a GET of a `conv:motd` string beside a list).
    reads = READS_BY_TYPE.get(str((j.trial.redis_final or {}).get("type")), VALUE_READS)
    other = [
        r["key"]
        for r in j.trial.store_other_reads
        if r["key"] not in owned and not r.get("written") and not r.get("held") and r.get("cmd") in reads
    ]
    return other[0] if other else None


def nothing_shown(j: Judged) -> bool:
    """The page after the refresh read successfully and showed none of the acknowledged turns:
    all an empty key can give. A page that shows some of them got those from somewhere else (a
    copy, a cache filled earlier): whatever lost the others, it is not a read of an empty key."""
    return j.result.amnesia and not j.result.page_failed


@register(
    "history_from_another_key",
    needs=("store", "page"),
    explains_loss=True,
    after=("session_cookie", "session_cookie_path"),
)
def diagnose(ev: Evidence) -> Diagnosis | None:
    # Evidence nothing else leaves: the store's record of the page's read -- the conversation's
    # key not read at all, a key of its shape that holds no conversation read instead -- and the
    # page lacking turns. A cache or a worker's copy reads no key (or the right one); a cookie
    # lost at a browser restart or scoped away from the history route leaves this too, and is
    # its own diagnosis where the browser says so.
    owned = {str(t.redis_final["key"]) for t in ev.trials if t.redis_final}
    cookie = explained(ev.found, "session_cookie", "session_cookie_path")
    # A session-only cookie lost at a browser restart: the page's read comes under a new session
    # -- another key of the shape, empty -- whether or not session_cookie was drawn (it does not
    # claim its trials' loss; explained() would miss them).
    cookie |= {j.id for j in ev.judged if j.trial.cookie_lost_at_restart}
    pool = [j for j in ev.judged if j.trial.store_other_reads is not None and j.trial.page_after_refresh is not None]
    hit = [
        (j, key)
        for j in pool
        if j.id not in cookie and nothing_shown(j) and (key := read_elsewhere(j, owned)) is not None
    ]
    if not hit:
        return None
    j0, key0 = hit[0]
    return Diagnosis(
        "history_from_another_key",
        "the history is read from another key than the one the conversation is written to: the read "
        "path looks the conversation up under another identity (a session cookie renamed in one route, "
        "an id taken from a header or a parameter the send route does not use) -- the turns are kept, "
        "the page never finds them",
        f"in trial {j0.id} the page's read after the refresh read {key0}, a key the app never wrote in "
        f"the run, and not {(j0.trial.redis_final or {}).get('key')}, which holds the turns "
        f"(the store's record); in {len(hit)}/{len(pool)} trials read after a refresh ({few(ids(j for j, _ in hit))})",
        len(hit),
        len(pool),
        [j.id for j, _ in hit],
    )
