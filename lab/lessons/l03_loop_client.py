"""Lesson 3: one asyncio client across event loops."""

from lab.lessons.base import Excerpt, Lesson, register

LESSON = register(
    Lesson(
        number=3,
        slug="loop_client",
        title="one redis.asyncio client shared across event loops",
        story="""\
To save connections, the backend keeps one module-global redis.asyncio client for all requests.
Under load users see "Something went wrong" now and then -- yet after a refresh the message they
were told had failed is in the history. Logs show "attached to a different loop" and "Event
loop is closed". No fault is injected here: the defect needs nothing but ordinary requests.""",
        defect="shared_loop_client",
        fault="none",
        refresh="settled",
        turns=5,
        forbid=("lost", "duplicated", "expired", "amnesia", "phantom_fail", "5xx"),
        look_for="""\
- shared_loop_client: the page got 5xx answers in (nearly) every trial, and phantom_fail: a
  request answered as failed whose message is in Redis (the failure came after the write);
  often amnesia too: the page's GET /history after the refresh failed the same way.
- backend.log: RuntimeError "... attached to a different loop" / "Event loop is closed".""",
        mechanism="""\
A redis.asyncio connection (its reader/writer streams, its lock) belongs to the event loop that
opened it. Flask gives every async view a new loop, closed when the view returns. The global
client's pooled connection was opened in an earlier request's loop: using it from the next loop
fails -- sometimes while reading the reply of a command Redis already executed, so the request
reports a failure for a write that happened (redis-py #2838, #3351).""",
        excerpts=(
            Excerpt("services/chat/defects/shared_loop_client.py", "def shared_client", 7),
            Excerpt("services/chat/views.py", "r, owned = b.client(url, b.retry)", 2),
        ),
        fix_hint="give each request a client of its own loop, and close it",
    )
)
