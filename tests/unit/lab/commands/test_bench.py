"""lab.commands.bench without a stack: the plain loop's junit report read per testcase (a
repetition failed only by a Playwright timeout is excluded on the correct profile, counted on the
incident), and the exit status (measuring, not judging; --fail-below judges)."""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

import pytest

from lab.commands.bench import exit_status
from lab.commands.bench_measure import Case, Measure, is_playwright_timeout, junit_cases, tally

# The messages as pytest 9 and Playwright 1.65 write them (an expect's says "with timeout" only).
EXPECT_TIMEOUT = (
    "AssertionError: Locator expected to have count '10'\nActual value: 8 \nCall log:\n"
    '  - Expect "to_have_count" get_by_test_id("message") with timeout 5000ms\n'
    '  - waiting for get_by_test_id("message")\n    9 × locator resolved to 8 elements'
)
GOTO_TIMEOUT = "playwright._impl._errors.TimeoutError: Page.goto: Timeout 30000ms exceeded."
TEXT_ASSERTION = "AssertionError: the history shows another text\nassert 'turn 0' == 'turn 1'"
SETUP_TIMEOUT = 'failed on setup with "TimeoutError: BrowserType.launch: Timeout 180000ms exceeded."'


def _junit(*cases: str) -> str:
    return (
        '<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests">'
        f'<testsuite name="pytest" tests="{len(cases)}">' + "".join(cases) + "</testsuite></testsuites>"
    )


def _case(n: int, seconds: float, inner: str = "") -> str:
    return (
        '<testcase classname="tests.bench.plain.test_plain_loop" '
        f'name="test_memory_survives_refresh[chromium-{n}-4]" time="{seconds}">{inner}</testcase>'
    )


def _node(tag: str, message: str, text: str = "traceback") -> str:
    return f"<{tag} message={quoteattr(message)}>{escape(text)}</{tag}>"


REPORT = _junit(
    _case(1, 1.25),
    _case(2, 6.5, _node("failure", EXPECT_TIMEOUT)),
    _case(3, 0.75, _node("failure", TEXT_ASSERTION)),
    _case(4, 0.5, _node("error", SETUP_TIMEOUT)),
)


def test_each_testcase_is_read_with_its_time_outcome_and_message() -> None:
    assert junit_cases(REPORT) == [
        Case("test_memory_survives_refresh[chromium-1-4]", 1.25, "passed", ""),
        Case("test_memory_survives_refresh[chromium-2-4]", 6.5, "failed", EXPECT_TIMEOUT),
        Case("test_memory_survives_refresh[chromium-3-4]", 0.75, "failed", TEXT_ASSERTION),
        Case("test_memory_survives_refresh[chromium-4-4]", 0.5, "error", SETUP_TIMEOUT),
    ]
    assert [c.timed_out for c in junit_cases(REPORT)] == [False, True, False, False]


def test_a_message_pytest_shortened_is_read_from_the_element_text() -> None:
    shortened = "AssertionError: Locator expected to have count '10'\n[+40 more lines; full report in element text]"
    full = 'E  AssertionError: Locator expected...\n  - Expect "to_have_count" locator("p") with timeout 5000ms'
    (case,) = junit_cases(_junit(_case(1, 6.0, _node("failure", shortened, full))))
    assert case.message == full
    assert case.timed_out


def test_an_error_outranks_a_failure_of_the_same_repetition() -> None:
    inner = _node("failure", GOTO_TIMEOUT) + _node("error", 'failed on teardown with "x"')
    assert junit_cases(_junit(_case(1, 31.0, inner))) == [
        Case("test_memory_survives_refresh[chromium-1-4]", 31.0, "error", 'failed on teardown with "x"')
    ]


@pytest.mark.parametrize(
    ("message", "timeout"),
    [
        (EXPECT_TIMEOUT, True),
        (GOTO_TIMEOUT, True),
        ("playwright._impl._errors.TimeoutError: Locator.click: Timeout 300ms exceeded.", True),
        (TEXT_ASSERTION, False),
        ("playwright._impl._errors.Error: Page.goto: net::ERR_CONNECTION_REFUSED at http://127.0.0.1:1/", False),
        ("Failed: Timeout (>60.0s) from pytest-timeout.", False),
    ],
    ids=["expect", "goto", "click", "text-assertion", "connection-refused", "pytest-timeout"],
)
def test_a_playwright_timeout_is_told_from_other_failures(message: str, timeout: bool) -> None:
    assert is_playwright_timeout(message) is timeout


def test_the_correct_profile_excludes_a_timed_out_repetition_and_its_seconds() -> None:
    m = tally("plain loop, correct", junit_cases(REPORT), 12.0, exclude_timeouts=True)
    # 12 s of wall time less the 6.5 s of the timed-out repetition; the text assertion and the
    # set-up error are failures of the loop, counted.
    assert m == Measure("plain loop, correct", trials=3, failed=2, seconds=5.5, timed_out=1)


def test_the_incident_profile_counts_its_expect_timeouts_as_failed_trials() -> None:
    m = tally("plain loop, incident", junit_cases(REPORT), 12.0, exclude_timeouts=False)
    assert m == Measure("plain loop, incident", trials=4, failed=3, seconds=12.0, timed_out=0)


def test_skipped_repetitions_are_no_trials() -> None:
    report = _junit(_case(1, 1.0), _case(2, 0.0, _node("skipped", "no browser")))
    assert tally("plain loop, correct", junit_cases(report), 3.0, exclude_timeouts=True) == Measure(
        "plain loop, correct", trials=1, failed=0, seconds=3.0
    )


def _measures(
    plain_ok: Measure | None = None, lab_ok: Measure | None = None, lab_bad: Measure | None = None
) -> list[Measure]:
    return [
        plain_ok or Measure("plain loop, correct", 2, 0, 2.5),
        lab_ok or Measure("lab runner, correct", 4, 0, 1.0),
        Measure("plain loop, incident", 2, 2, 11.0),
        lab_bad or Measure("lab runner, incident", 2, 2, 0.5),
    ]


MET = {"passing_ratio": True, "failing_ratio": True, "correct_300_s": True, "first_trial": True}
MISSED = {**MET, "failing_ratio": False, "correct_300_s": False}


def test_every_target_met_exits_0() -> None:
    assert exit_status(_measures(), MET, fail_below=False) == (0, "exit 0: both loops measured, every target met")
    assert exit_status(_measures(), MET, fail_below=True) == (0, "exit 0: both loops measured, every target met")


def test_a_missed_target_is_a_figure_unless_fail_below() -> None:
    assert exit_status(_measures(), MISSED, fail_below=False) == (
        0,
        "exit 0: both loops measured; a missed target is a figure (--fail-below makes it exit 1)",
    )
    assert exit_status(_measures(), MISSED, fail_below=True) == (
        1,
        "exit 1: targets missed (failing_ratio, correct_300_s) and --fail-below given",
    )


def test_a_plain_loop_whose_every_repetition_timed_out_measured_nothing() -> None:
    timed_out = Measure("plain loop, correct", 0, 0, 0.4, timed_out=2)
    assert exit_status(_measures(plain_ok=timed_out), MET, fail_below=False) == (
        1,
        "exit 1: measured nothing -- plain loop, correct: all 2 of its trials failed only by a Playwright "
        "timeout (a slow machine). Rerun when the machine is quieter, or with more --plain-runs / --trials.",
    )


def test_one_excluded_repetition_of_two_still_measures() -> None:
    one_left = Measure("plain loop, correct", 1, 0, 1.2, timed_out=1)
    assert exit_status(_measures(plain_ok=one_left), MET, fail_below=False)[0] == 0


def test_lab_trials_all_unknown_measured_nothing_and_each_empty_measure_is_named() -> None:
    unknown = Measure("lab runner, incident (2 unknown)", 2, 0, 0.5, unknown=2)
    none_ran = Measure("lab runner, correct", 0, 0, 0.1)
    assert exit_status(_measures(lab_ok=none_ran, lab_bad=unknown), MET, fail_below=False) == (
        1,
        "exit 1: measured nothing -- lab runner, correct: no trial ran; lab runner, incident (2 unknown): "
        "all 2 of its trials unknown (exercised nothing). Rerun when the machine is quieter, or with more "
        "--plain-runs / --trials.",
    )


def test_some_lab_trials_unknown_still_measure() -> None:
    partly = Measure("lab runner, incident (1 unknown)", 2, 1, 0.5, unknown=1)
    assert exit_status(_measures(lab_bad=partly), MET, fail_below=False)[0] == 0
