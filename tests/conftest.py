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


# Fixtures over the session's real stack, shared by integration and e2e tests.
from collections.abc import Iterator  # noqa: E402

pytest_plugins = ["pytester"]

import pytest  # noqa: E402
import redis  # noqa: E402

from lab.stack.native import NativeStack  # noqa: E402
from lab.stack.toxiproxy import Toxiproxy  # noqa: E402


@pytest.fixture
def toxi(lab_stack: NativeStack) -> Iterator[Toxiproxy]:
    """The session stack's Toxiproxy, reset (all proxies enabled, no toxics) around each test."""
    t = Toxiproxy(lab_stack.cfg.toxiproxy_url)
    t.reset()
    yield t
    t.reset()


@pytest.fixture
def redis_direct(lab_stack: NativeStack) -> Iterator["redis.Redis[bytes]"]:
    """Redis itself, bypassing Toxiproxy (the checker's view of the truth)."""
    r = redis.Redis.from_url(lab_stack.cfg.redis_url, socket_timeout=5)
    yield r
    r.close()


# Where the suite's time goes: setup + call + teardown per test directory, printed at the end of
# every run (docs/figures.md's per-directory figures come from this line; --durations names the tests).
_SECONDS_PER_DIR: dict[str, list[float]] = {}


def _test_dir(nodeid: str) -> str:
    parts = nodeid.split("::", 1)[0].split("/")
    return "/".join(parts[:2]) if len(parts) > 2 else parts[0]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    acc = _SECONDS_PER_DIR.setdefault(_test_dir(report.nodeid), [0.0, 0.0])
    acc[0] += report.duration
    acc[1] += report.when == "call"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _SECONDS_PER_DIR:
        return
    total = sum(s for s, _ in _SECONDS_PER_DIR.values())
    parts = [f"{d} {s:.0f} s ({int(n)} tests)" for d, (s, n) in _SECONDS_PER_DIR.items()]
    terminalreporter.write_line(f"time per directory: {', '.join(parts)}; {total:.0f} s in all")
