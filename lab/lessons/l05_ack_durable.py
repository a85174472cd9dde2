"""Lesson 5: acknowledging before the write is durable; swallowed errors."""

from lab.lessons.base import Excerpt, Lesson, register

LESSON = register(
    Lesson(
        number=5,
        slug="ack_durable",
        title="acknowledging before the write is durable (swallowed errors)",
        story="""\
"The cache must never break the chat": every Redis error is logged and the request answers 200.
During a short Redis outage users kept chatting; the bot even answered them -- as a stranger.
Afterwards those turns were not in their history, and nothing had told them. Here the Redis link
is down for one turn of each conversation.""",
        defect="swallowed_errors",
        fault="down",
        refresh="settled",
        turns=5,
        look_for="""\
- swallowed_errors: L n/n, correct: - 0/n (its failed turn was answered 503, shown "not saved",
  and the user's retry stored it once the link was back).
- backend-events.jsonl: store.error for the turn, then chat.done "replied" -- an
  acknowledgement of a write that failed.""",
        mechanism="""\
An acknowledgement is a promise: "this is stored". A 200 sent after a failed write (or before
the write's outcome is known, as in lesson 1) breaks it silently: the user cannot retry what they
were told succeeded. Let the failure reach the answer: 503 (JSON), the page marks the message
"not saved" with a retry, and the retry reuses the message id so it cannot store it twice.""",
        excerpts=(
            Excerpt("services/chat/defects/swallowed_errors.py", "def log_and_continue", 2),
            Excerpt("services/chat/views.py", "async def _store(", 7),
        ),
        fix_hint="let a failed write fail the request (ApiError 503)",
    )
)
