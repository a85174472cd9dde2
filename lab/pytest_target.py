"""`pytest --lab-target SPEC`: a user's own pytest-playwright tests against their own app, its
Redis behind the lab's Toxiproxy (part of the ``chaoslab`` plugin, lab.pytest_plugin).

The target is started once per session as `lab investigate` starts it; pytest-playwright's
``base_url`` points at it; ``inject`` and ``@pytest.mark.fault`` act on its Redis link. Every
test that uses ``page`` or ``context`` is recorded from the browser's network events (lab.investigate.plugin.recorder)
and judged by the lab's checker beside the test's own asserts, which stay the user's check. The
terminal summary gives, per test and fault, the anomaly rates with Wilson intervals over its
repeats (``--lab-trials N`` or pytest-repeat's ``--count``), the diagnoses, and a replay line."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from lab.faults import Targets
    from lab.investigate.plugin.recorder import Recorder
    from lab.investigate.spec.parse import Spec
    from lab.investigate.evidence.store import StoreMonitor
    from lab.model.checker import Result
    from lab.model.history import Trial
    from lab.stack.model_link import ModelLink

spec_key = pytest.StashKey["Spec"]()
trials_key = pytest.StashKey[list[tuple[str, "Trial", "Result"]]]()
recorder_key = pytest.StashKey["Recorder"]()
faults_key = pytest.StashKey[list[tuple[str, dict[str, Any]]]]()


def addoptions(group: Any) -> None:
    group.addoption("--lab-target", default=None, metavar="SPEC", help="your app, as lab investigate's spec (TOML)")
    group.addoption(
        "--lab-set", action="append", default=[], metavar="KEY=VALUE", help="override a spec field (repeatable)"
    )
    group.addoption(
        "--lab-trials", type=int, default=None, metavar="N", help="with --lab-target: run each test N times"
    )
    group.addoption(
        "--lab-chromium",
        default=None,
        metavar="PATH",
        help="with --lab-target: the Chromium your tests drive (default: the lab's, Debian's, "
        "where your launch arguments name none)",
    )


def configure(config: pytest.Config) -> None:
    raw = config.getoption("--lab-target", None)
    if not raw:
        return
    from lab.common.errors import UsageError
    from lab.investigate.spec import parse as spec_mod

    try:
        spec = spec_mod.load(Path(raw), config.getoption("--lab-set"))
    except UsageError as exc:
        raise pytest.UsageError(f"--lab-target {raw}: {exc}") from None
    config.stash[spec_key] = spec
    config.stash[trials_key] = []
    if hasattr(config.option, "base_url"):  # pytest-base-url (pytest-playwright's base_url)
        config.option.base_url = spec.http.base_url
    chromium = config.getoption("--lab-chromium")
    if chromium and not Path(chromium).is_file():
        raise pytest.UsageError(f"--lab-chromium {chromium}: no such file; give a Chromium executable's path")
    _LabBrowser.chromium = chromium
    config.pluginmanager.register(_LabBrowser(), "chaoslab-browser")
    n = config.getoption("--lab-trials")
    if n is not None:
        if not hasattr(config.option, "count"):
            raise pytest.UsageError("--lab-trials needs pytest-repeat (pip install pytest-repeat), or use --count")
        config.option.count = n


class _LabBrowser:
    """Under --lab-target, the user's unchanged pytest-playwright test drives the lab's Chromium
    (Debian's, as the lab's own commands do) where its launch arguments choose none: Playwright's
    own browser is often not installed (no download: "Executable doesn't exist ... playwright
    install") and the lab's verdicts do not depend on which Chromium runs. An executable_path or
    a channel the user set is kept; --lab-chromium PATH names one outright. Registered only with
    --lab-target: without it the plugin overrides nothing."""

    chromium: str | None = None  # --lab-chromium (a class's: pytest 9 deprecates an instance's session fixture)

    @pytest.fixture(scope="session")
    @classmethod
    def browser_type_launch_args(cls, browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
        if cls.chromium:
            return {**browser_type_launch_args, "executable_path": cls.chromium}
        if browser_type_launch_args.get("executable_path") or browser_type_launch_args.get("channel"):
            return browser_type_launch_args
        from lab.common.errors import UsageError
        from lab.driver.browser import executable

        try:
            return {**browser_type_launch_args, "executable_path": executable()}
        except UsageError:  # no system Chromium: Playwright's own, if it is installed
            return browser_type_launch_args


@dataclass
class LabTarget:
    spec: "Spec"
    targets: "Targets"
    redis_url: str  # the lab's Redis, direct (not through Toxiproxy)
    base_url: str
    store: "StoreMonitor | None" = None  # the store's record (lab.investigate.evidence.store)
    model: "ModelLink | None" = None  # the stand-in model ([model]): what every call was told


@pytest.fixture(scope="session")
def lab_target(request: pytest.FixtureRequest) -> Iterator[LabTarget]:
    """The app of --lab-target, started with its Redis behind Toxiproxy, for the whole session."""
    if spec_key not in request.config.stash:
        pytest.skip("lab_target needs --lab-target SPEC")
    from lab.common import redact
    from lab.common.config import LabConfig
    from lab.common.errors import LabError
    from lab.faults import Targets
    from lab.investigate.target import redaction, process as target
    from lab.investigate.target.link import direct_redis, link_for_spec, model_for

    spec, cfg = request.config.stash[spec_key], LabConfig.from_env()
    # As lab investigate routes it: the lab's own Redis + Toxiproxy, the app's Redis behind
    # `lab proxy up` ([start] external), or the app's compose project ([start] compose).
    link = link_for_spec(spec, cfg)
    with ExitStack() as session:
        # First in, last out: the trials' records and the target's log are scrubbed of the
        # login's secrets once the target has stopped. Not the terminal: pytest's capture swaps
        # sys.stdout itself (the lab's summary is redacted line by line, lab.investigate.plugin.summary).
        session.enter_context(redaction.kept_secret(spec, link.run_dir, lab_artifacts(request.config), terminal=False))
        try:
            session.enter_context(link)
            # The stand-in model, where the app calls one ([model]): as lab investigate serves it.
            model = session.enter_context(model_for(spec, link, lambda line: None))
            session.enter_context(
                target.running(
                    spec, link.run_dir, cfg.host, cfg.ports["redis_proxy"], link, model.url if model else None
                )
            )
            redis_url = direct_redis(spec, link)  # the app's Redis, as the app logs in to it
        except LabError as exc:
            pytest.fail(redact.text(f"--lab-target {spec.file}: {exc}"), pytrace=False)
        targets = Targets.of(link)
        targets.toxiproxy.reset()
        from lab.investigate.evidence.store import StoreMonitor

        store = session.enter_context(StoreMonitor(redis_url))
        monitor = store if store.error is None else None
        yield LabTarget(spec, targets, redis_url, spec.http.base_url, monitor, model)


@pytest.fixture(autouse=True)
def _lab_record(request: pytest.FixtureRequest) -> Iterator[None]:
    """With --lab-target, a test using pytest-playwright's ``page`` or ``context`` is recorded and
    judged (every page of that context: a second tab the test opens too); one using only
    ``base_url`` gets the app started; others run as they are."""
    names = request.fixturenames
    if spec_key not in request.config.stash or not any(f in names for f in ("context", "base_url")):
        yield
        return
    lt: LabTarget = request.getfixturevalue("lab_target")
    if "context" not in names:  # `page` takes `context`: a test using neither drives no browser of pytest-playwright's
        yield
        return
    from lab.investigate.plugin.recorder import Recorder
    from lab.model.checker import check_safe

    ctx = request.getfixturevalue("context")
    seed = int(request.getfixturevalue("lab_seed"))
    rec = Recorder(lt.spec, ctx, lt.redis_url, request.node.nodeid, seed, store=lt.store, model=lt.model)
    request.node.stash[recorder_key] = rec
    request.node.stash[faults_key] = []
    yield
    applied = request.node.stash[faults_key]
    if applied:
        rec.fault, rec.fault_params = applied[0]
    try:
        t = rec.trial()
    finally:
        rec.close()
    lt.redis_url = rec.redis_url  # the db the app writes, where the trial found it elsewhere
    result = check_safe(t)
    request.config.stash[trials_key].append((_test_name(request.node.nodeid), t, result))
    request.node.user_properties.append(("lab_verdict", result.validity))
    request.node.user_properties.append(("lab_anomalies", json.dumps(result.anomalies())))
    # The trial's record (sends, what the page showed, the settled history, the Redis key),
    # beside pytest-playwright's own artifacts (--tracing / --screenshot retain-on-failure).
    out = artifacts(request.config, request.node.nodeid)
    out.mkdir(parents=True, exist_ok=True)
    (out / "trial.json").write_text(json.dumps(t.as_json(), indent=1) + "\n")


def lab_artifacts(config: pytest.Config) -> Path:
    """The trials' folders, under pytest-playwright's --output (test-results) like its traces."""
    base = Path(config.getoption("--output", None) or "test-results")
    return (base if base.is_absolute() else Path(config.rootpath) / base) / "lab"


def artifacts(config: pytest.Config, nodeid: str) -> Path:
    """A trial's folder (lab_artifacts)."""
    return lab_artifacts(config) / re.sub(r"[^\w.-]+", "-", nodeid).strip("-")


@pytest.fixture
def lab_chat(request: pytest.FixtureRequest, _lab_record: None) -> "Recorder":
    """This test's record (--lab-target): ``lab_chat.trial()`` and the refresh helpers at the
    lab's points -- ``reload_after_answer(page, send)``, ``reload_mid_stream(page, send)``,
    ``restart_browser(page)``."""
    if recorder_key not in request.node.stash:
        pytest.skip("lab_chat needs --lab-target SPEC and the page fixture")
    return request.node.stash[recorder_key]


def _test_name(nodeid: str) -> str:
    """The test without pytest-repeat's [N-M] (its repeats are one test's trials)."""
    return re.sub(r"\[\d+-\d+\]$", "", re.sub(r"-\d+-\d+\]$", "]", nodeid))


def summary(terminalreporter: Any, config: pytest.Config, seed: int) -> None:
    from lab.investigate.plugin.summary import lines

    if spec_key not in config.stash:
        return
    if not config.stash[trials_key]:
        terminalreporter.write_sep("=", "chaoslab: no test recorded")
        terminalreporter.write_line(
            "--lab-target records the tests that use pytest-playwright's page or context fixture (a context "
            "the test makes itself from browser is not watched); none of this run's did, so nothing was judged"
        )
        return
    terminalreporter.write_sep("=", "chaoslab: the lab's judgement of the recorded tests")
    replay = ["--lab-target", config.getoption("--lab-target")]
    replay += [x for v in config.getoption("--lab-set") for x in ("--lab-set", v)] + ["--lab-seed", str(seed)]
    records = config.stash[trials_key]
    for line in lines(records, replay, lambda nodeid: str(artifacts(config, nodeid) / "trial.json")):
        terminalreporter.write_line(line)
