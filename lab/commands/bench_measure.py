"""What one loop of `lab bench` measured: its trials counted, failed, excluded, and their time --
for the plain loop, read per repetition from its junit report."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Literal


@dataclass
class Measure:
    name: str
    trials: int  # counted: a plain repetition excluded as timed out is not among them
    failed: int
    seconds: float  # wall time of the counted trials (an excluded repetition's junit time taken off)
    timed_out: int = 0  # plain loop, correct profile: repetitions failed only by a Playwright timeout
    unknown: int = 0  # lab runner: trials that exercised nothing (among `trials`, never failed)

    @property
    def per_trial(self) -> float:
        return self.seconds / max(1, self.trials)

    @property
    def counted(self) -> int:
        """The trials that say something: a lab trial left unknown says nothing."""
        return self.trials - self.unknown


Outcome = Literal["passed", "failed", "error", "skipped"]
# Playwright's timeouts: an action's or a navigation's "Page.goto: Timeout 5000ms exceeded.", and
# an expect's, which (Playwright 1.65) says only `Expect "to_have_count" ... with timeout 5000ms`
# in its call log: an expect fails only once its timeout ran out.
_EXPECT_TIMEOUT = re.compile(r'Expect "\w+".* with timeout \d+ms')
# pytest cuts a long failure message to 500 characters and says so; the element text is whole.
_SHORTENED = "full report in element text]"
_TAGS: tuple[tuple[str, Outcome], ...] = (("skipped", "skipped"), ("failure", "failed"), ("error", "error"))


def is_playwright_timeout(message: str) -> bool:
    return ("Timeout" in message and "exceeded" in message) or bool(_EXPECT_TIMEOUT.search(message))


@dataclass(frozen=True)
class Case:
    """One repetition of the plain loop, as its junit report has it."""

    name: str
    seconds: float  # the testcase's junit time
    outcome: Outcome
    message: str = ""  # the <error>'s, else the <failure>'s

    @property
    def timed_out(self) -> bool:
        """Failed by a Playwright timeout only (a set-up or teardown error is never one)."""
        return self.outcome == "failed" and is_playwright_timeout(self.message)


def junit_cases(xml: str) -> list[Case]:
    """Each <testcase> of a junit report, with its time, outcome and failure message."""
    cases = []
    for tc in ET.fromstring(xml).iter("testcase"):
        outcome: Outcome = "passed"
        message = ""
        # An error (set-up, teardown) outranks a failure: the repetition did not run clean to its end.
        for tag, kind in _TAGS:
            node = tc.find(tag)
            if node is not None:
                outcome = kind
                message = node.get("message", "")
                if message.endswith(_SHORTENED):
                    message = node.text or message
        cases.append(Case(tc.get("name", ""), float(tc.get("time", 0) or 0), outcome, message))
    return cases


def tally(name: str, cases: list[Case], seconds: float, exclude_timeouts: bool) -> Measure:
    """The plain loop's measure. With exclude_timeouts (the correct profile) a repetition that
    failed only by a Playwright timeout is the machine's speed, not a finding: left out with its
    seconds. On the incident profile that timeout is the failing trial's cost: counted."""
    ran = [c for c in cases if c.outcome != "skipped"]
    out = [c for c in ran if exclude_timeouts and c.timed_out]
    kept = [c for c in ran if not (exclude_timeouts and c.timed_out)]
    failed = sum(c.outcome != "passed" for c in kept)
    left = max(0.0, seconds - sum(c.seconds for c in out))
    return Measure(name, len(kept), failed, left, timed_out=len(out))
