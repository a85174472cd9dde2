"""Lesson 8: two tabs, one conversation -- a read-modify-write that loses updates."""

from lab.lessons.base import Excerpt, Lesson, register

LESSON = register(
    Lesson(
        number=8,
        slug="two_tabs",
        title="two tabs, one conversation (a read-modify-write loses updates)",
        story="""\
The history is one JSON document in Redis: the backend GETs it, appends the new rows in Python
and SETs it back. Every request works on its own. A user with two tabs open sends from both at
nearly the same moment; both requests are answered, but after a refresh one of the two turns is
gone. Here the last turn goes out from two tabs of one browser at once (same cookies) while
Redis answers 100 ms late (Toxiproxy latency), as it does under load.""",
        defect="read_modify_write",
        fault="latency",
        fault_params=(("latency_ms", 100),),
        refresh="two_tabs",
        turns=5,
        look_for="""\
- read_modify_write: L n/n, correct: - 0/n, with both tabs' sends acknowledged in every trial.
- redis-commands.jsonl of a failing trial: GET, GET, SET, SET on the same key -- the second SET
  carries a document that never saw the first one's rows. redis.json: layout "document",
  holding the other tab's turn only.""",
        mechanism="""\
A read-modify-write is three steps, and nothing stops another request between the read and the
write: both read version N, both write N+1, and the later write wins. Each request did exactly
what it was written to do; the loss is in their interleaving, so no single request shows an
error. The window is one Redis round trip (latency only widens it). Close it: WATCH the key and
write in MULTI/EXEC, retrying when EXEC says the key changed (optimistic locking); or let Redis
do the append (a Lua script, or a list with RPUSH) so there is no read to go stale.""",
        excerpts=(
            Excerpt("services/chat/defects/read_modify_write.py", "async def append_read_modify_write", 7),
            Excerpt("services/chat/store.py", "local added = 0", 7),
        ),
        fix_hint="make the append atomic: WATCH + MULTI/EXEC with a retry, a script, or RPUSH on a list",
        window="--profile read_modify_write --vary tab_gap_ms",
        window_seen="loses a turn when the second tab sends within 300-1000 ms of the first (under 100 ms latency); 0/5 at 1000",
    )
)
