"""[start] compose = "compose.yaml": the app as it lives in its own compose file (the lab starts
it there, with an override of its own: lab.stack.compose.app).

    [start]
    compose = "compose.yaml"      # relative to the spec file; never written
    service = "app"               # the backend's service
    redis_service = "redis"       # its Redis's service (default "redis")
    redis_env = "REDIS_URL"       # how the backend finds Redis: the variable to override, or
    # redis_host = "redis"        #   the host name it dials (Toxiproxy takes the name over)
    port = 3000                   # the backend's port inside its container
    [start.env]                   # optional: added to the backend's environment (a bug switch)
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from lab.investigate.spec.fields import bad, number, text
from lab.stack.compose.override import AppCompose

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
KEYS = {
    "compose",
    "service",
    "redis_service",
    "redis_env",
    "redis_host",
    "port",
    "redis_port",
    "env",
    "ready_timeout_s",
}


def compose_start(st: dict[str, Any], spec_dir: Path) -> AppCompose:
    extra = set(st) - KEYS
    if extra:
        raise bad(f"start.{sorted(extra)[0]}", st[sorted(extra)[0]], f"with compose: only {', '.join(sorted(KEYS))}")
    file = (spec_dir / text(st, "start", "compose", required=True, expected="the app's compose file")).resolve()
    if not file.is_file():
        raise bad("start.compose", st["compose"], f"an existing compose file (resolved to {file})")
    service = text(st, "start", "service", required=True, pattern=NAME, expected="the backend's service name")
    redis_service = text(st, "start", "redis_service", default="redis", pattern=NAME, expected="a service name")
    redis_env = st.get("redis_env")
    redis_host = st.get("redis_host")
    if (redis_env is None) == (redis_host is None):
        raise bad(
            "start.redis_env / start.redis_host",
            redis_env or redis_host,
            'exactly one: the variable the backend reads Redis from (redis_env = "REDIS_URL"), or the host '
            'name it dials (redis_host = "redis")',
        )
    if redis_env is not None:
        text(st, "start", "redis_env", pattern=ENV_NAME, expected="an environment variable's name")
    else:
        text(st, "start", "redis_host", pattern=NAME, expected="a host name")
    if "port" not in st:
        raise bad("start.port", None, "the backend's port inside its container (e.g. port = 3000)")
    port = number(st, "start", "port", 0, 1, 65535)
    return AppCompose(
        str(file),
        service,
        redis_service,
        redis_env,
        redis_host,
        int(port),
        int(number(st, "start", "redis_port", 6379, 1, 65535)),
    )
