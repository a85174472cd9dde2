"""The schedule (Jepsen's generator): what a run will do, decided before anything runs. A cell
(profile x fault x refresh point x turns) and a seed become trial plans -- messages, the fault's
turn, pacing, the replay command (schedule); the matrix cut into shards by column (shard); a
one-send fault armed once around the same turn of a group of trials (lockstep); the one table of
experiments both `lab chaos`'s matrix and `lab investigate`'s plan are drawn from (experiments).

May import: lab.common, lab.faults (and the package's version)."""
