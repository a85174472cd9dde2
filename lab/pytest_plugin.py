"""pytest plugin ``chaoslab`` (entry point): the real stack and fault injection as fixtures.

Thin by design: importing it has no side effects, and a test that uses none of its fixtures or
markers runs exactly as without it (it overrides no other plugin's fixtures).

    def test_slow_redis(inject, lab_stack):
        inject("latency", latency_ms=300)          # removed after the test, pass or fail
        ...

    @pytest.mark.fault("down", proxy="redis")       # applied by the lab_fault fixture
    @pytest.mark.defects("fire_and_forget")         # the profile lab_defects returns
    def test_x(lab_fault, lab_defects): ...
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Iterator
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from lab import pytest_target
from lab.pytest_target import _lab_record, lab_chat, lab_target  # noqa: F401 (fixtures of this plugin)

if TYPE_CHECKING:
    from lab.faults import Fault, Targets
    from lab.stack import Stack

_SEED_KEY = "chaoslab/seed"


class Inject(Protocol):
    def __call__(self, fault: "str | Fault", /, **params: Any) -> str: ...


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("chaoslab", "chaos lab for LLM chat memory")
    group.addoption(
        "--lab-mode", default="native", choices=("native", "compose"), help="how the lab stack runs (default: native)"
    )
    group.addoption(
        "--lab-seed",
        default=None,
        metavar="N|last",
        help="seed for the lab's schedules; 'last' replays the previous run's seed",
    )
    group.addoption(
        "--lab-keep-stack",
        action="store_true",
        help="leave a stack this session started running afterwards (debugging)",
    )
    pytest_target.addoptions(group)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "defects(*names): the chat backend's defect profile for "
        "this test (lab_defects fixture); none = the correct profile",
    )
    config.addinivalue_line(
        "markers",
        "fault(name, **params): a fault the lab_fault fixture "
        "applies for this test and removes after it (see `lab faults`)",
    )
    raw = config.getoption("--lab-seed", None)
    cache = getattr(config, "cache", None)  # absent under -p no:cacheprovider
    if raw == "last":
        seed = cache.get(_SEED_KEY, None) if cache is not None else None
        if seed is None:
            raise pytest.UsageError("--lab-seed=last: no previous seed recorded; try --lab-seed=N")
    elif raw is not None:
        try:
            seed = int(raw)
        except ValueError:
            raise pytest.UsageError(
                f"--lab-seed={raw!r} is not an integer; try --lab-seed=1234 or --lab-seed=last"
            ) from None
    else:
        seed = random.SystemRandom().randrange(1 << 31)
    config.stash[_seed_key] = seed
    if cache is not None:
        cache.set(_SEED_KEY, seed)
    pytest_target.configure(config)


_seed_key = pytest.StashKey[int]()


def pytest_report_header(config: pytest.Config) -> str:
    target = config.getoption("--lab-target", None)
    return f"chaoslab: --lab-seed={config.stash[_seed_key]} (replay with that option)" + (
        f"; --lab-target {target}: tests using page or context are recorded and judged" if target else ""
    )


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    pytest_target.summary(terminalreporter, config, config.stash[_seed_key])


@pytest.fixture(scope="session")
def lab_stack(request: pytest.FixtureRequest) -> Iterator["Stack"]:
    """The real stack (redis-server, toxiproxy-server, backend; --lab-mode compose: the same
    three as containers), up for the whole session.

    A healthy stack already up in the same run folder is reused and left running; one this
    session started is stopped at the end (unless --lab-keep-stack)."""
    from lab.common.errors import LabError
    from lab.stack import for_mode

    stack = for_mode(request.config.getoption("--lab-mode"))
    stack.keep = bool(request.config.getoption("--lab-keep-stack"))
    with ExitStack() as session:
        try:
            session.enter_context(stack)
        except LabError as exc:
            pytest.fail(f"the lab stack did not come up: {exc}", pytrace=False)
        yield stack


@pytest.fixture(scope="session")
def lab_targets(request: pytest.FixtureRequest) -> "Targets":
    """What faults act on -- the lab's stack, or with --lab-target the app's Redis link;
    Toxiproxy is reset (no toxics, proxies enabled) at session start."""
    from lab.faults import Targets

    if pytest_target.spec_key in request.config.stash:
        return request.getfixturevalue("lab_target").targets
    targets = Targets.of(request.getfixturevalue("lab_stack"))
    targets.toxiproxy.reset()
    return targets


@pytest.fixture
def lab_seed(request: pytest.FixtureRequest) -> int:
    """This test's seed: the session seed plus a hash of the test id (stable per test)."""
    return (request.config.stash[_seed_key] + zlib.crc32(request.node.nodeid.encode())) % (1 << 31)


@pytest.fixture
def inject(request: pytest.FixtureRequest, lab_targets: "Targets") -> Iterator[Inject]:
    """Apply faults during a test: ``inject("latency", latency_ms=300)`` returns the evidence
    that it took effect. Every fault applied is removed after the test, in reverse order, also
    when the test fails."""
    from lab.faults import make
    from lab.faults.write_refused import for_a_test

    # ExitStack removes them in reverse order and goes on past a failing removal (the first
    # error is raised once all are done).
    with ExitStack() as applied:

        def _inject(fault: "str | Fault", /, **params: Any) -> str:
            f = make(fault, **params) if isinstance(fault, str) else fault
            beside = for_a_test(f, lab_targets)  # write_refused at=write: its first refusal only
            rec = request.node.stash.get(pytest_target.recorder_key, None)
            removed = applied.enter_context(ExitStack())  # exits after the fault's own removal: its end
            evidence = applied.enter_context(f.on(lab_targets))
            applied.enter_context(beside)  # stopped before the fault is removed
            if pytest_target.faults_key in request.node.stash:  # --lab-target: the trial's fault
                request.node.stash[pytest_target.faults_key].append((f.name, dict(params)))
            if rec is not None:  # the sends from now until its removal are under it
                removed.callback(rec.fault_applied(evidence))
            return evidence

        yield _inject


@pytest.fixture
def lab_fault(request: pytest.FixtureRequest, inject: Inject) -> str | None:
    """Applies the test's ``@pytest.mark.fault(name, **params)``; returns its evidence."""
    marker = request.node.get_closest_marker("fault")
    if marker is None:
        return None
    if len(marker.args) != 1:
        raise pytest.UsageError(f"{request.node.nodeid}: use @pytest.mark.fault(name, **params)")
    from lab.common.errors import UsageError

    try:
        return inject(marker.args[0], **marker.kwargs)
    except UsageError as exc:
        raise pytest.UsageError(f"{request.node.nodeid}: {exc}") from None


@pytest.fixture
def lab_defects(request: pytest.FixtureRequest) -> tuple[str, ...]:
    """The defect profile named by ``@pytest.mark.defects(...)`` (empty = correct profile)."""
    from services.chat.defects import REGISTRY

    marker = request.node.get_closest_marker("defects")
    names = tuple(marker.args) if marker else ()
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        raise pytest.UsageError(
            f"{request.node.nodeid}: unknown defect(s) {', '.join(unknown)}; valid: {', '.join(REGISTRY)}"
        )
    return names
