"""Test-wide settings: the test session's stack runs on its own ports and run folder, so a stack
a developer started with `make up` is neither reused nor stopped by the tests."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEST_ENV = {
    "LAB_REDIS_PORT": "26379",
    "LAB_REDIS_PROXY_PORT": "26380",
    "LAB_BACKEND_PORT": "28081",
    "LAB_CHAT_PROXY_PORT": "28080",
    "LAB_TOXIPROXY_PORT": "28474",
    "LAB_RUN_DIR": str(ROOT / ".lab" / "run" / "pytest"),
}
for _k, _v in TEST_ENV.items():
    os.environ.setdefault(_k, _v)
