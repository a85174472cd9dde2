"""`lab investigate`: bring up Redis + Toxiproxy, start the target against them, check its
contract, run the experiments (trials concurrently, faults shared through the chaos runner's
Lockstep), judge every trial with the one checker, diagnose, and write the same reports as
`lab chaos` (results.json cells, junit.xml, report.html, an atomic `latest-investigate`)."""

from __future__ import annotations

import random
import shlex
import shutil
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from lab.common import redact
from lab.common.config import LabConfig, script
from lab.common.errors import UsageError
from lab.faults.base import Targets
from lab.investigate.target import redaction, process as target
from lab.investigate.run import experiments
from lab.investigate.browser import pages
from lab.investigate.run import groups, reporting
from lab.investigate.run.blackbox import Prober
from lab.investigate.run.experiments import Experiment, TrialId
from lab.investigate.evidence.store import StoreMonitor
from lab.investigate.run.preflight import preflight
from lab.investigate.target.link import direct_redis, link_for, link_for_spec, model_for
from lab.stack.model_link import ModelLink
from lab.stack.native import NativeStack
from lab.investigate.spec.parse import Spec, fill
from lab.model.outcome import TrialOutcome
from lab.report import EXIT_CLEAN, EXIT_FOUND, EXIT_INCONCLUSIVE
from lab.common.signals import interrupt_on, run_async
from lab.common.locks import exclusive
from lab.suspects import Scan

__all__ = ["EXIT_CLEAN", "EXIT_FOUND", "EXIT_INCONCLUSIVE", "Investigation", "run", "link_for"]
DEFAULT_CONCURRENCY = 6  # trials at once (each its own pooled browser context)


@dataclass
class Investigation:
    spec: Spec
    cfg: LabConfig
    plan: list[tuple[int, Experiment]]  # (number in full_plan, experiment)
    trials: int
    reports_root: Path
    seed: int
    turns: int = 3
    sets: list[str] = field(default_factory=list)
    concurrency: int = DEFAULT_CONCURRENCY  # trials at once: a group (the fault-free experiments' side by side)
    replay_of: str | None = None  # replay: every trial runs this trial's seed
    out: TextIO = sys.stdout
    scan: Scan | None = None  # the spec's [source], scanned before anything starts
    check_only: bool = False  # lab init: the contract check, no experiment and no report
    contract: str = ""  # the contract check's line
    redis_direct: str = ""  # the Redis the key is read from: the lab's, or the app's own (external)
    model: ModelLink | None = None  # the stand-in model ([model])
    contract_s: float = 0.0  # what the contract check took (lab bench's like-with-like)

    kind = "investigate"  # the run folder's name: <time>-<kind>-<app>

    def say(self, msg: str) -> None:
        print(msg, file=self.out, flush=True)

    def run(self) -> int:
        if self.spec.source:
            from lab import suspects

            # Before anything starts: a file that does not parse is bad input (exit 2).
            self.scan = suspects.scan(self.spec.source, root=self.spec.start.cwd)
        kind = "replay" if self.replay_of else self.kind
        run_id = time.strftime("%Y%m%d-%H%M%S") + f"-{kind}-{self.spec.name}"
        out_dir = self.reports_root / run_id
        link = link_for_spec(self.spec, self.cfg)
        # SIGTERM / SIGHUP unwind like Ctrl-C: the target, Redis and Toxiproxy are stopped.
        # One investigation per run folder: a second one would stop the first one's Redis and
        # Toxiproxy as "leftovers" when it starts.
        busy = UsageError(
            f"another lab investigate is running on {link.run_dir}",
            "wait for it, or give this one its own LAB_RUN_DIR and LAB_*_PORT values",
        )
        # A login's secrets never reach the terminal or a file of the run (lab.investigate.target.redaction);
        # scrubbed before the lock is released: the next run's target starts a new log.
        with (
            exclusive(link.run_dir / "investigate.lock", busy),
            redaction.kept_secret(self.spec, link.run_dir, out_dir),
            interrupt_on((signal.SIGTERM, signal.SIGHUP)),
        ):
            self.out = redact.writer(self.out)  # bound before the run: sys.stdout's Writer misses it
            return self._run(link, out_dir)

    def _run(self, link: Any, out_dir: Path) -> int:
        t0 = time.monotonic()
        done: list[TrialOutcome] = []
        interrupted: BaseException | None = None
        self.say(
            f"lab investigate: {self.spec.name}, seed {self.seed}"
            + (f" (replay of {self.replay_of})" if self.replay_of else "")
        )
        with link, self._keeping_the_log(link, out_dir):
            host, port = self.cfg.host, self.cfg.ports["redis_proxy"]
            model_url = link.cfg.model_url if self.spec.model else None
            argv = [fill(a, target.placeholders(self.spec, host, port, model_url)) for a in self.spec.start.command]
            self.redis_direct = direct_redis(self.spec, link)  # first: the login and db are said as used
            self.say(self._where(link, host, port, argv))
            with (
                model_for(self.spec, link, self.say) as model,
                target.running(self.spec, link.run_dir, host, port, link, model.url if model else None) as proc,
            ):
                self.model = model
                self.say(f"  target ready (pid {proc.pid}, log {link.run_dir / 'target.log'})")
                pg = self.spec.page
                self.say(
                    f"  driving the app's own page {pg.path} by its selectors"
                    if pg
                    else "  driving the API from the lab's page on the target's origin"
                )
                try:
                    run_async(self._browse(Targets.of(link), done))
                except KeyboardInterrupt as exc:  # a signal (lab.common.signals): the report covers what finished
                    interrupted = exc
                self._check_alive(proc, link)
        if self.check_only and interrupted is None:
            return EXIT_CLEAN if self.contract.startswith("contract ok") else EXIT_FOUND
        return self._report(done, out_dir, time.monotonic() - t0, interrupted)

    def _where(self, link: Any, host: str, port: int, argv: list[str]) -> str:
        if self.spec.start.external:
            return f"  the running app, its Redis ({link.redis_url}) behind the lab proxy at {host}:{port}"
        if self.spec.start.compose is not None:
            stood_in = f"; stand-ins for {', '.join(link.substituted)} (no registry)" if link.substituted else ""
            return f"  {link.file} as compose project {link.project}: {link.route}{stood_in}"
        return f"  Redis for the target at {host}:{port} (through Toxiproxy); starting: {' '.join(argv)}"

    @staticmethod
    @contextmanager
    def _keeping_the_log(link: NativeStack, out_dir: Path) -> Iterator[None]:
        """The target's output is evidence (its own error logs): kept with the report, however
        the run ends."""
        try:
            yield
        finally:
            out_dir.mkdir(parents=True, exist_ok=True)
            if (link.run_dir / "target.log").is_file():
                shutil.copyfile(link.run_dir / "target.log", out_dir / "target.log")

    async def _browse(self, targets: Targets, done: list[TrialOutcome]) -> None:
        async with pages.chromium() as browser:
            prober = Prober(self.spec, browser, targets, self.redis_direct, model=self.model)
            with StoreMonitor(self.redis_direct) as prober.store:
                if prober.store.error is not None:
                    self.say(
                        f"  the store's record: none -- Redis refused MONITOR ({prober.store.error}); answers and probes only"
                    )
                try:
                    # A replay checks the contract too: it finds where the app keeps the key
                    # (another db) as the run it replays did, or its trials read another db.
                    t_contract = time.monotonic()
                    self.contract = await preflight(prober)
                    self.contract_s = time.monotonic() - t_contract
                    self.say("  " + self.contract)
                    if not self.check_only:
                        await self._trials(prober, done)
                finally:
                    prober.close()
                    await prober.close_pool()

    async def _trials(self, prober: Prober, done: list[TrialOutcome]) -> None:
        """The experiments' trials, once the contract holds (a window sweep runs its own rounds)."""
        # Fault-free experiments share nothing a fault could disturb: their trials run
        # together; an experiment with a fault has the Redis link to itself.
        # All of them at once, as a faulted group's trials are (--trials 2: the whole group took
        # 6.3 s where 2 at a time took 9.5 s -- its 12-turn trials the longest -- on a WebSocket
        # app, the same 24 trials judged, nothing drawn; 2026-12-07, 2 cores, nothing else running).
        free = [groups.member(self, no, e, 0, None) for no, e in self.plan if e.fault == "none"]
        if free:
            await groups.run_group(self, prober, free, done, min(self.concurrency, self.trials * len(free)))
        # Faults in place for the whole trial (latency) before the one-send outages (a drop, Redis
        # down, a restart): an app's pooled connections broken by an outage can fail its next
        # requests, and that must not be charged to the next experiment (measured: 4 of 5 two_tabs
        # trials after `down` got a 500 ConnectionError).
        faulted = [(no, e) for no, e in self.plan if e.fault != "none"]
        ordered = sorted(faulted, key=lambda x: x[1].built.window == "send")
        for members in self._sharing(ordered):
            await groups.run_group(self, prober, members, done)

    async def _experiment(
        self,
        prober: Prober,
        no: int,
        exp: Experiment,
        done: list[TrialOutcome],
        start: int = 0,
        count: int | None = None,
    ) -> None:
        """One experiment's trials (lab.investigate.run.groups). ``start``, ``count``: trials
        start..start+count (a window's later rounds), else all, with unknown ones replaced."""
        await groups.run_group(self, prober, [groups.member(self, no, exp, start, count)], done)

    def _sharing(self, ordered: list[tuple[int, Experiment]]) -> list[list[groups.Member]]:
        """The faulted experiments in order, each with those later ones that share its fault in
        place for the whole trial (their trials in the same groups: the link faulted once)."""
        out: list[list[groups.Member]] = []
        for no, exp in ordered:
            m = groups.member(self, no, exp, 0, None)
            same = next((ms for ms in out if groups.shares_fault(ms[0].exp, exp)), None)
            if same is not None:
                same.append(m)
            else:
                out.append([m])
        return out

    def _seed(self, no: int, k: int) -> int:
        """A trial's seed (lab.investigate.run.experiments); a replay's every run: the replayed one's."""
        return (TrialId.parse(self.replay_of) if self.replay_of else TrialId(no, k)).seed(self.seed)

    def replay_command(self, trial_id: str, runs: int = 5) -> str:
        sets = [x for s in self.sets for x in ("--set", s)]
        return shlex.join(
            [
                script(),
                "replay",
                "--target",
                str(self.spec.file),
                *sets,
                "--turns",
                str(self.turns),
                "--seed",
                str(self.seed),
                "--trial",
                trial_id,
                "--runs",
                str(runs),
            ]
        )

    def _check_alive(self, proc: Any, link: NativeStack) -> None:
        if not proc.alive():
            self.say(
                f"  warning: the target exited during the run; last lines:\n{target.tail(link.run_dir / 'target.log')}"
            )

    # ------------------------------------------------------------------ reports
    def _report(
        self, done: list[TrialOutcome], out_dir: Path, seconds: float, interrupted: BaseException | None
    ) -> int:
        return reporting.report(self, done, out_dir, seconds, interrupted)


def run(
    spec: Spec,
    cfg: LabConfig,
    trials: int,
    turns: int,
    reports_root: Path,
    only: Callable[[Experiment], bool] | None = None,
    seed: int | None = None,
    sets: list[str] | None = None,
    replay: str | None = None,
    runs: int = 5,
    concurrency: int = DEFAULT_CONCURRENCY,
) -> int:
    everything = list(enumerate(experiments.full_plan(spec, turns)))
    seed = seed if seed is not None else random.SystemRandom().randrange(1 << 31)
    if replay is not None:
        no = TrialId.parse(replay).no
        if not 0 <= no < len(everything):
            raise UsageError(
                f"--trial {replay!r}: no experiment e{no} with --turns {turns}",
                f"experiments are e0..e{len(everything) - 1}; use the replay line as printed",
            )
        plan, trials = [everything[no]], runs
    elif only is None:
        n = len(experiments.for_spec(spec, turns))
        plan = everything[:n]
    else:
        plan = [(i, e) for i, e in everything if only(e)]
    return Investigation(
        spec, cfg, plan, trials, reports_root, seed, turns, sets or [], max(1, concurrency), replay
    ).run()
