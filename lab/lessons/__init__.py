"""Lessons on async pitfalls: each an experiment the trainee watches fail, fixes, and proves.

A lesson is one small module (``lNN_<slug>.py``) registering a ``Lesson``: the story, the
defect, the cell that exposes it, what to look for, the mechanism with the lines of code
concerned (read from the real files, so the text never drifts from the code), and the pass
criterion. The trainee edits ``lessons/NN_<slug>/exercise.py``; pristine copies live in
``lab/lessons/exercises/`` (``--reset`` restores from there), reference solutions in
``lab/lessons/solutions/``.

May import: lab.common, lab.stack, lab.plan, lab.model, lab.runner, lab.suspects, lab.report, lab.commands.
"""

from lab.lessons.base import *  # noqa: F401,F403  (the model, the registry and its helpers)
from lab.lessons.base import MIN_TRIALS, Lesson  # noqa: F401  (named: for type checkers)

# Lesson modules register themselves, in number order.
from lab.lessons import (  # noqa: E402,F401
    l01_create_task,
    l02_ttl_set_once,
    l03_loop_client,
    l04_idempotency,
    l05_ack_durable,
    l06_mid_stream,
    l07_redis_restart,
    l08_two_tabs,
)
