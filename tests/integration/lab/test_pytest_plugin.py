"""The chaoslab pytest plugin, exercised the way users meet it: through pytester sessions that
run inside this one (and reuse this session's stack rather than starting their own)."""

from __future__ import annotations

import pytest

from lab.faults import Targets


def _no_toxics_left(t: Targets) -> bool:
    return all(not p["toxics"] and p["enabled"] for p in t.toxiproxy.proxies().values())


def test_header_prints_the_seed_and_last_replays_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_ok(lab_seed):\n    assert isinstance(lab_seed, int)\n")
    first = pytester.runpytest_subprocess("--lab-seed=4242", "-p", "cacheprovider")
    first.stdout.fnmatch_lines(["chaoslab: --lab-seed=4242 *"])
    again = pytester.runpytest_subprocess("--lab-seed=last")
    again.stdout.fnmatch_lines(["chaoslab: --lab-seed=4242 *"])
    again.assert_outcomes(passed=1)


def test_bad_seed_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_ok():\n    pass\n")
    res = pytester.runpytest_subprocess("--lab-seed=soon")
    res.stderr.fnmatch_lines(["*--lab-seed='soon' is not an integer; try --lab-seed=1234*"])
    assert res.ret == pytest.ExitCode.USAGE_ERROR


def test_a_failing_test_leaves_no_toxic_behind(pytester: pytest.Pytester, lab_targets: Targets) -> None:
    pytester.makepyfile("""
        def test_fails_under_faults(inject):
            inject("latency", latency_ms=20)
            inject("down", proxy="redis")
            assert False, "the test body failed"
    """)
    res = pytester.runpytest_subprocess()
    res.assert_outcomes(failed=1)
    assert _no_toxics_left(lab_targets)


def test_fault_marker_is_applied_and_removed(pytester: pytest.Pytester, lab_targets: Targets) -> None:
    pytester.makepyfile("""
        import pytest

        @pytest.mark.fault("latency", latency_ms=30)
        def test_marked(lab_fault, lab_targets):
            assert "listed on redis" in lab_fault
            assert [t["type"] for t in lab_targets.toxiproxy.toxics("redis")] == ["latency"]
    """)
    pytester.runpytest_subprocess().assert_outcomes(passed=1)
    assert _no_toxics_left(lab_targets)


@pytest.mark.parametrize(
    "marker, fragment",
    [
        ('fault("nope")', "unknown fault 'nope'"),
        ('fault("latency", latencyms=5)', "fault 'latency' has no parameter latencyms"),
        ('defects("nope")', "unknown defect(s) nope; valid: fire_and_forget"),
    ],
)
def test_bad_markers_fail_setup_naming_the_valid_values(pytester: pytest.Pytester, marker: str, fragment: str) -> None:
    pytester.makepyfile(f"""
        import pytest

        @pytest.mark.{marker}
        def test_marked(lab_fault, lab_defects):
            pass
    """)
    res = pytester.runpytest_subprocess()
    assert res.ret != 0
    assert "1 passed" not in res.stdout.str()
    assert fragment in res.stdout.str() + res.stderr.str()


def test_loading_the_plugin_changes_nothing_for_other_tests(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        def test_playwright_defaults_untouched(browser_type_launch_args):
            assert "executable_path" not in browser_type_launch_args
    """)
    res = pytester.runpytest_subprocess("-p", "chaoslab")
    res.assert_outcomes(passed=1)


def test_lab_chromium_names_the_browser_and_a_bad_path_is_refused(pytester: pytest.Pytester) -> None:
    """--lab-chromium PATH (with --lab-target): that executable, over the lab's default."""
    from lab.common.config import ROOT

    spec = str(ROOT / "examples" / "foreign-app.toml")
    pytester.makepyfile("""
        def test_args(browser_type_launch_args):
            assert browser_type_launch_args["executable_path"] == "/usr/bin/chromium"
    """)
    res = pytester.runpytest_subprocess("--lab-target", spec, "--lab-chromium", "/usr/bin/chromium")
    res.assert_outcomes(passed=1)
    bad = pytester.runpytest_subprocess("--lab-target", spec, "--lab-chromium", "/nowhere/chromium")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert "--lab-chromium /nowhere/chromium: no such file" in bad.stderr.str()
