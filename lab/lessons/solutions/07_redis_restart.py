"""Lesson 7 solution: an append-only file, fsynced on every write.

``appendonly yes`` + ``appendfsync always``: a write is acknowledged by Redis only once it is
on disk, so a SIGKILL loses nothing. (``everysec`` may lose up to a second of writes; RDB
snapshots everything since the last save.)
"""

DURABLE = True
