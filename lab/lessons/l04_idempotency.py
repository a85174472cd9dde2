"""Lesson 4: retries that duplicate non-idempotent writes, and idempotency keys."""

from lab.lessons.base import Excerpt, Lesson, register

LESSON = register(
    Lesson(
        number=4,
        slug="idempotency",
        title="retries that duplicate writes, and idempotency keys",
        story="""\
After a network blip some users see the same message twice in their history. The client
library retries a command when the connection breaks -- redis-py does so by default. The
append is RPUSH: if Redis ran it and only the reply was lost, the retry runs it again. Here the
link drops the reply of one write per conversation (Toxiproxy reset_peer, downstream).""",
        defect="blind_retry",
        fault="drop",
        fault_params=(("one_shot", True), ("stream", "downstream")),
        refresh="settled",
        turns=5,
        look_for="""\
- blind_retry: D n/n (a row stored twice), correct: - 0/n although the same reply was dropped.
- toxics.json of a failing trial: the reset_peer toxic on the redis proxy, at the fault turn;
  redis.json: two identical rows with the same id.""",
        mechanism="""\
A lost reply leaves the outcome UNKNOWN, not failed: the command may have run. Retrying is only
safe when running twice equals running once. MULTI/EXEC makes RPUSH + PEXPIRE atomic, not
idempotent. An idempotency key (the message id the page sends) checked in the same atomic step
as the append -- a Lua script: SADD the id, RPUSH only if it was new -- makes the retry a no-op.
The page's own retry of a "not saved" message reuses that id for the same reason.""",
        excerpts=(
            Excerpt("services/chat/defects/blind_retry.py", "async def append_plain", 7),
            Excerpt("services/chat/store.py", "local added = 0", 7),
        ),
        fix_hint="make the append idempotent by row id (or stop retrying it blindly)",
    )
)
