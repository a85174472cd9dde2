"""Lesson 6: a refresh mid-stream."""

from lab.lessons.base import Excerpt, Lesson, register

LESSON = register(
    Lesson(
        number=6,
        slug="mid_stream",
        title="a refresh mid-stream (store before the first token)",
        story="""\
Replies stream token by token. To store "the complete turn", the backend saves the user's
message and the reply after the last token was sent. A user who refreshes while a long reply is
still streaming finds that turn missing -- their question too. Here the page reloads as soon as
the first token of the last reply is rendered.""",
        defect="save_at_stream_end",
        fault="none",
        refresh="mid_stream",
        turns=3,
        look_for="""\
- save_at_stream_end: L n/n, correct: - 0/n.
- backend-events.jsonl: chat.stream_closed with completed=false for the last message, and no
  chat.saved_at_stream_end: the save after the loop never ran.""",
        mechanism="""\
Flask streams a body with a generator. When the browser goes away, the server's next write
fails and the generator is closed (GeneratorExit at its yield): code after the token loop never
runs. The first token is already the acknowledgement -- the user has seen the turn begin -- so
the turn must be stored before the first token leaves. (Chromium keeps reading a cancelled body
for up to 5 s to reuse the socket: a short reply can still complete; the lab streams the last
reply slowly so the cut is real.)""",
        excerpts=(
            Excerpt("services/chat/defects/save_at_stream_end.py", "def tokens_then_save", 5),
            Excerpt("services/chat/views.py", "yield from (b.stream_save(tokens, save)", 2, before=2),
        ),
        fix_hint="store the turn before the first token is sent",
    )
)
