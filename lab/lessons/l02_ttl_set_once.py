"""Lesson 2: a TTL set once."""

from lab.lessons.base import Excerpt, Lesson, register

LESSON = register(
    Lesson(
        number=2,
        slug="ttl_set_once",
        title="a TTL set once (the conversation expires while in use)",
        story="""\
Conversations are kept 7 days "so Redis does not fill up". Long-time users report that the bot
suddenly forgot everything in the middle of a conversation they use every day. The EXPIRE is
sent only when the list is created; later messages never renew it. Here the TTL is 3 s and the
conversation runs past 6 s with a write at least every 1.5 s, so a week becomes seconds.""",
        defect="ttl_set_once",
        fault="ttl_elapse",
        fault_params=(("ttl_ms", 3000),),
        refresh="settled",
        turns=5,
        look_for="""\
- ttl_set_once: E n/n (the whole conversation lost to its TTL), correct: - 0/n.
- The trial's redis.json: the key is gone (pttl -2) although the last write was < 1 s before
  the read; the evidence is Redis's own keyspace "expired" event for chat:<session>.""",
        mechanism="""\
EXPIRE/PEXPIRE sets a deadline for the key, counted from when it is sent. Appending to the list
later does not move the deadline: only another EXPIRE does. So a TTL set at creation means
"delete this conversation TTL after its first message", however active it is. The fix renews
the TTL on every write -- and in the same atomic step as the append, or a request cut between
the two leaves a key without TTL (or with a stale one).""",
        excerpts=(
            Excerpt("services/chat/defects/ttl_set_once.py", "async def append_ttl_on_create", 6),
            Excerpt("services/chat/store.py", "if tonumber(ARGV[1]) > 0 then", 4),
        ),
        fix_hint="make every write renew the TTL, atomically with the append",
        window="--profile ttl_set_once --vary age_ttl_pct",
        window_seen="loses the conversation once it is older than 85-115 % of its TTL; younger, never",
    )
)
