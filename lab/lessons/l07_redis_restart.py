"""Lesson 7: a Redis restart without persistence, and what AOF changes."""

from lab.lessons.base import Excerpt, Lesson, register

LESSON = register(
    Lesson(
        number=7,
        slug="redis_restart",
        title="a Redis restart without persistence, and AOF",
        kind="config",
        story="""\
Redis was deployed "as a cache": no RDB snapshots, no append-only file. One night the host
restarted it (OOM killer, then the supervisor). Every user's history was gone at once -- the
code was correct. Here Redis is killed (SIGKILL) and started again in the middle of each
conversation. The fix is configuration, not code: the exercise is one setting, DURABLE.""",
        # Restarted before the second turn: a restart before the first write would lose nothing
        # and prove nothing (the seeded choice picks turn 1 half of the time).
        defect=None,
        fault="redis_restart",
        refresh="settled",
        turns=3,
        fault_turn=2,
        look_for="""\
- durable=false: L n/n -- the first turn, stored before the restart, is gone; the turns after
  it are there (a fresh, empty Redis). durable=true: - 0/n.
- The fault evidence: a new redis-server run_id. The lab's `lab chaos` reports the non-durable
  case as the environment, not a defect of the code.""",
        mechanism="""\
Redis keeps data in memory. Without persistence (--save '' and appendonly no) a restart starts
empty. RDB snapshots lose everything since the last save. The append-only file (AOF) logs each
write; with appendfsync always Redis fsyncs before it replies, so an acknowledged write survives
a SIGKILL (everysec: up to ~1 s lost). The chat's code cannot tell the difference: durability
is a property of how the store is run, and belongs in its configuration and review.""",
        excerpts=(
            Excerpt("lab/stack/native.py", 'persistence = ["--appendonly", "yes"', 2, before=2),
            Excerpt("lab/faults/redis_restart.py", "if self.durable:", 6),
        ),
        fix_hint="choose the configuration that survives a SIGKILL",
    )
)
