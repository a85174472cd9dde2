"""Test-wide settings: the test session's stack runs on its own ports and run folder, so a stack
a developer started with `make up` is neither reused nor stopped by the tests."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# `make test` runs the suite in pytest-xdist workers side by side (the suite mostly waits: TTLs,
# latencies, restarts). Each worker gets a session stack on ports of its own -- the base ports
# shifted by 10 per worker -- and its own run folder; free_ports draws from a block of its own.
WORKER = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
WORKERS = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
MAX_WORKERS = 8
_BASE_PORTS = {
    "LAB_REDIS_PORT": 26379,
    "LAB_REDIS_PROXY_PORT": 26380,
    "LAB_BACKEND_PORT": 28081,
    "LAB_CHAT_PROXY_PORT": 28080,
    "LAB_TOXIPROXY_PORT": 28474,
}


def worker_env(worker: int) -> dict[str, str]:
    """Worker N's session stack: the base ports + 10 N, and a run folder of its own."""
    env = {k: str(p + 10 * worker) for k, p in _BASE_PORTS.items()}
    env["LAB_RUN_DIR"] = str(ROOT / ".lab" / "run" / ("pytest" if worker == 0 else f"pytest-gw{worker}"))
    return env


# Every worker's fixed ports, so no worker's free_ports picks another's session stack port.
FIXED_PORTS = frozenset(int(v) for w in range(MAX_WORKERS) for k, v in worker_env(w).items() if k.endswith("_PORT"))
TEST_ENV = worker_env(WORKER)


# Fixtures over the session's real stack, shared by integration and e2e tests.
from collections.abc import Iterator  # noqa: E402

pytest_plugins = ["pytester"]

import pytest  # noqa: E402
import redis  # noqa: E402


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """The session's ports and run folder, unless the developer set them. Not in pytest-xdist's
    controller, which runs no test: its workers inherit its environment and would all keep its
    ports (one stack shared by every worker, each resetting the others' faults)."""
    if getattr(config.option, "numprocesses", None) and "PYTEST_XDIST_WORKER" not in os.environ:
        return
    for k, v in TEST_ENV.items():
        os.environ.setdefault(k, v)


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


# Tests that share one run stay in one pytest-xdist worker: a module-scoped stack or grid is made
# once, and the Docker tests share one engine (the lab's private one, one per machine). Every
# other test is scheduled on its own. (A scheduler of our own: pytest-xdist 3.8's xdist_group
# marks do not group under pytest 9, whose node ids it can no longer suffix.)
ONE_WORKER = (
    "tests/compose/",
    "tests/e2e/test_memory_survives_refresh.py",
    "tests/e2e/test_report_html.py",
    "tests/e2e/test_shards.py",
    "tests/integration/services/chat/test_lab_mode_off.py",
)


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    from xdist.scheduler import LoadScopeScheduling

    class SharedRuns(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return next((g for g in ONE_WORKER if nodeid.startswith(g)), nodeid)

    return SharedRuns(config, log)  # type: ignore[arg-type]  # xdist's Producer


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
    # Under pytest-xdist the seconds are summed over the workers: pytest's last line is the wall time.
    terminalreporter.write_line(f"time per directory: {', '.join(parts)}; {total:.0f} s in all")
