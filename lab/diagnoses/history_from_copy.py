"""The page after the refresh lacked turns that Redis had held since before the page's read
left: the history it was shown came from a copy (an app's cache, a worker's own memory, the
page's storage), not from the key as it stood."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, explained, few, ids, register
from lab.model.store import first_writes, held_before_read, key_read_in_window, read_began


@register(
    "history_from_copy",
    needs=("store", "page"),
    after=("stored_after_answer", "rewrite_window", "history_from_another_key"),
)
def diagnose(ev: Evidence) -> Diagnosis | None:
    # Its pool: trials whose page was read after a refresh at a known time, with a record -- not
    # those whose read went to another key (history_from_another_key: no copy, another identity).
    elsewhere = explained(ev.found, "history_from_another_key")
    pool = [
        j
        for j in ev.judged
        if j.trial.store is not None
        and j.trial.page_after_refresh is not None
        and read_began(j.trial) is not None
        and j.id not in elsewhere
    ]
    # A turn missing from that page while the key held it is not a write that came late (the
    # record has it before the read), nor a rewrite's gap (a removal would have emptied it).
    hit = [(j, held) for j in pool if (held := held_before_read(j.trial, j.stale))]
    if not hit:
        return None
    j0, held0 = hit[0]
    began = read_began(j0.trial) or 0.0
    # The record says which copy: no read of the key at all while the page read (the app's
    # memory, a cache in front of Redis), or a read of it and still less shown (a page's own copy,
    # a filter after the read).
    unread = sum(key_read_in_window(j.trial) is False for j, _ in hit)
    ahead_ms = (began - first_writes(j0.trial)[held0[0]][0]) * 1000
    return Diagnosis(
        "history_from_copy",
        "the history is served from a copy that lags the store: right after the refresh the page "
        "lacked turns Redis had held since before its read left -- an app's cache or a worker's "
        "own memory that writes do not keep in step (or a page rendering its own stored copy)",
        f"in trial {j0.id} turn {held0[0]} had been in Redis {ahead_ms:.0f} ms when the page's read "
        f"left (MONITOR against the browser's request time), and the page did not show it"
        + (" (it showed none of the conversation)" if not j0.trial.page_after_refresh else "")
        + "; later "
        f"reads did; in {len(hit)}/{len(pool)} trials read after a refresh ({few(ids(j for j, _ in hit))})"
        + (
            f"; in {unread} of them no command on the key while the page read: the history was "
            "answered without reading it (from memory, or a store of its own)"
            if unread
            else ""
        ),
        len(hit),
        len(pool),
        [j.id for j, _ in hit],
    )
