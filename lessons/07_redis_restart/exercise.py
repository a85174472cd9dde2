"""Lesson 7 exercise: how Redis keeps its data across a restart (configuration, not code).

The check reads DURABLE and starts redis-server with it: False = no persistence (``--save ''``,
``appendonly no``), True = append-only file with ``appendfsync always``. Then it kills Redis
(SIGKILL) in the middle of each conversation. Check with: lab lesson 7 --check
"""

# "Redis is a cache; persistence only slows it down."
DURABLE = False
