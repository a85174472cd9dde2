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
    "LAB_MODEL_PORT": 28410,
    "LAB_MODEL_PROXY_PORT": 28411,
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
    _mark_the_session(config)
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
    "tests/integration/lab/k8s/",  # one control plane at a time: its ports are fixed
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
    _report_leftovers(terminalreporter)
    if not _SECONDS_PER_DIR:
        return
    total = sum(s for s, _ in _SECONDS_PER_DIR.values())
    parts = [f"{d} {s:.0f} s ({int(n)} tests)" for d, (s, n) in _SECONDS_PER_DIR.items()]
    # Under pytest-xdist the seconds are summed over the workers: pytest's last line is the wall time.
    terminalreporter.write_line(f"time per directory: {', '.join(parts)}; {total:.0f} s in all")


# Nothing of the lab may outlive the session (a test once SIGKILLed `lab up` with no `lab
# down`; the private dockerd and containerd it left broke the next module's engine, 12 errors far
# from the cause). The session is snapshot at its start and compared at its end: a process,
# mount, network interface, lab container or /run/chaoslab-* folder that is new and this
# session's (tests/leftovers.py says how that is decided) fails the run, is listed, and only
# then is removed, so one failed run does not poison the next.
#
# Where it runs: once, in the process that sees the whole session -- pytest itself, or under
# pytest-xdist its controller. The controller takes the snapshot before it starts the workers
# (its sessionstart runs before xdist's, which is trylast) and compares after they have exited
# (this sessionfinish is trylast: after xdist's, which tears the workers down), so every
# worker's session fixtures (the session stacks) have been finalized. A check in each worker
# could not tell its own leftovers from a process the other worker has just started.
# A pytest that a test runs (it inherits LAB_TEST_SESSION) leaves the check to the outer one.
from tests import leftovers as _lo  # noqa: E402

_CHECK = pytest.StashKey[str]()
_BEFORE = pytest.StashKey["_lo.Snapshot"]()
_FOUND = pytest.StashKey[list["_lo.Leftover"]]()
_MARKS = pytest.StashKey["_lo.Marks"]()
_TMP = pytest.StashKey[Path]()
LEFTOVER_WAIT_S = 20.0  # a stopped dockerd takes seconds to stop its containerd and unmount


def _mark_the_session(config: pytest.Config) -> None:
    if "PYTEST_XDIST_WORKER" in os.environ or os.environ.get(_lo.SESSION_VAR):
        return
    import secrets

    session = f"{os.getpid()}-{secrets.token_hex(4)}"
    os.environ[_lo.SESSION_VAR] = session  # inherited by the workers and all they start
    config.stash[_CHECK] = session
    if config.getoption("--lab-keep-stack", default=False):
        return  # its stacks run on after the session, with whatever folder they were given
    import tempfile

    tempfile.gettempdir()  # this process keeps the machine's: pytest's own tmp folders stay there
    config.stash[_TMP] = Path(tempfile.mkdtemp(prefix=f"chaoslab-tests-{os.getpid()}-"))
    os.environ["TMPDIR"] = str(config.stash[_TMP])  # the workers' and all they start (_lo.temp_left)


def pytest_sessionstart(session: pytest.Session) -> None:
    if _CHECK in session.config.stash:
        session.config.stash[_BEFORE] = _lo.take()


def _marks(config: pytest.Config) -> "_lo.Marks":
    basetemp = str(config._tmp_path_factory.getbasetemp())  # type: ignore[attr-defined]  # pytest's own; xdist gives workers subfolders of it
    session_runs = [Path(worker_env(w)["LAB_RUN_DIR"]) for w in range(MAX_WORKERS)]
    keep = bool(config.getoption("--lab-keep-stack", default=False))
    return _lo.Marks(
        session=config.stash[_CHECK],
        own_pid=os.getpid(),
        paths=(basetemp, str(ROOT / ".lab" / "docker-tests"), str(ROOT / ".lab" / "run" / "pytest")),
        mount_roots=(str(ROOT / ".lab") + "/", "/run/chaoslab-", basetemp),
        # --lab-keep-stack leaves the session stacks running on purpose.
        kept_groups=_lo.kept_groups(session_runs) if keep else frozenset(),
    )


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if _BEFORE not in config.stash:
        return
    from lab.common.errors import NotReady
    from lab.common.wait import wait_until

    before, marks = config.stash[_BEFORE], _marks(config)
    tmp = config.stash.get(_TMP, None)

    def now() -> list[_lo.Leftover]:
        temp = _lo.temp_left(tmp, skip=marks.paths) if tmp is not None else []
        return _lo.leftovers(before, _lo.take(), marks) + temp

    # Bounded: processes stopped by a teardown may need a moment to exit; no fixed sleep.
    try:
        wait_until(
            lambda: not now(),
            what="the session's processes, mounts, interfaces and temporary files gone",
            timeout_s=LEFTOVER_WAIT_S,
            interval_s=0.5,
        )
        return
    except NotReady:
        found = now()
    if not found:
        return
    config.stash[_FOUND], config.stash[_MARKS] = found, marks
    if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _report_leftovers(tr: pytest.TerminalReporter) -> None:
    found = tr.config.stash.get(_FOUND, None)
    if not found:
        return
    tr.write_sep("=", f"LEFT RUNNING by this test session: {len(found)} (the run fails)", red=True, bold=True)
    for lo in found:
        tr.write_line(f"  {lo.line()}")
    tr.write_line(
        "A test or fixture that started a stack, an engine or a run did not stop it: find the test by the"
        " tmp folder in the command line or cwd above, and give it a `finally` (or fixture teardown) that runs"
        " `lab down` (tests/cleanup.py: lab_down_after)."
    )
    if any(lo.kind == "temp file" for lo in found):
        tr.write_line(
            "A temp file is in the session's TMPDIR: what made it (a test, a lab command, an app the lab ran) did"
            " not remove it -- a process stopped by a signal runs no clean-up of its own, so its starter must"
            " (lab.common.files.owned_tmp)."
        )
    # Removed only now, after the report, so the next run starts clean.
    cleaned = _lo.clean(found, tr.config.stash[_MARKS])
    tr.write_line("Cleaned up after this report: " + "; ".join(cleaned))
    del tr.config.stash[_FOUND]


def pytest_unconfigure(config: pytest.Config) -> None:
    """No terminal summary (an internal error, -p no:terminal): report and clean up on stderr.
    Then the session's temporary folder goes, whatever is left in it (reported above)."""
    found = config.stash.get(_FOUND, None)
    if found:
        import sys

        print(f"LEFT RUNNING by this test session: {', '.join(lo.line() for lo in found)}", file=sys.stderr)
        print("cleaned up: " + "; ".join(_lo.clean(found, config.stash[_MARKS])), file=sys.stderr)
    tmp = config.stash.get(_TMP, None)
    if tmp is not None:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
