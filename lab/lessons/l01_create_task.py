"""Lesson 1: asyncio.create_task in a Flask async view."""

from lab.lessons.base import Excerpt, Lesson, register

LESSON = register(
    Lesson(
        number=1,
        slug="create_task",
        title="asyncio.create_task in a Flask async view",
        story="""\
Users say the bot answers, but after a refresh its answers are gone from the history; their own
messages are still there. The backend "saves in the background" so the reply is not slowed down
by Redis: each write is scheduled with asyncio.create_task and never awaited. Nothing is logged.""",
        defect="fire_and_forget",
        fault="none",
        refresh="after_ack",
        turns=3,
        look_for="""\
- fire_and_forget: L n/n (every trial loses acknowledged turns), correct: - 0/n.
- In the failing trial's backend-events.jsonl: chat.done "replied" for every message, and no
  store.error -- the write did not fail, it never ran.
- redis.json: the user rows are there, the assistant rows are not.""",
        mechanism="""\
Flask runs each async view with asyncio.run in a new thread: a new event loop per request. When
the view returns, asyncio.run cancels every task still pending before the loop closes. The user's
write survives only because the view awaits a read (LLEN/LRANGE) right after scheduling it, which
lets the task run; the reply's write is scheduled last, and the view returns at once: cancelled
before it sent anything. Flask's docs: "you cannot spawn background tasks ... via create_task".""",
        excerpts=(
            Excerpt("services/chat/defects/fire_and_forget.py", "async def run_write", 2),
            Excerpt("services/chat/views.py", "await b.run_write(_store(b, r, sid, [user]", 7, before=0),
        ),
        fix_hint="edit run_write so the write is finished before the view goes on",
        window="--profile fire_and_forget --vary refresh_delay_ms",
        window_seen="loses the turn at every delay tried (0-1000 ms): no wait saves it -- the write was cancelled, not late",
    )
)
