"""`lab` command-line errors: exit 2, a message naming the valid values, nothing started."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lab.common.config import ROOT


def lab(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "LAB_RUN_DIR": str(tmp / "run"), "HOME": str(tmp)}
    return subprocess.run(
        [sys.executable, "-m", "lab", *args], capture_output=True, text=True, timeout=60, cwd=ROOT, env=env
    )


@pytest.mark.parametrize(
    "args, fragment",
    [
        (("chaos", "--only", "profile=nope"), "unknown defect(s) nope"),
        (("chaos", "--only", "refresh=later"), "valid: in_flight, after_ack, mid_stream"),
        (("chaos", "--only", "fault=warp"), "unknown fault 'warp'"),
        (("chaos", "--only", "colour=blue"), "key in profile, fault, refresh, turns"),
        (("chaos", "--only", "fault=latency:latency_ms=9000"), "over 2000 ms"),
        (("chaos", "--trials", "0"), "--trials=0 is out of range"),
        (("chaos", "--mode", "k8s"), "unknown mode 'k8s'; valid: native, compose, external"),
        (("chaos", "--shard", "4/3"), "--shard '4/3' is not K/N"),
        (("chaos", "--shard", "10/10"), "the matrix has 9 columns"),
        (("chaos", "--max-trials", "0"), "--max-trials=0 is out of range"),
        (("chaos", "--only", "fault=model_error"), "add --model"),
        (("chaos", "--model", "--mode", "compose"), "use --mode native"),
        (
            ("replay", "--profile", "correct", "--fault", "model_cut", "--refresh", "settled", "--seed", "1"),
            "add --model",
        ),
        (
            ("replay", "--profile", "correct", "--fault", "none", "--refresh", "soon", "--seed", "1"),
            "unknown refresh point 'soon'",
        ),
        (
            (
                "replay",
                "--profile",
                "correct",
                "--fault",
                "none",
                "--refresh",
                "after_ack",
                "--seed",
                "1",
                "--knob",
                "x=1",
            ),
            "valid names: refresh_delay_ms, tab_gap_ms",
        ),
        (("replay", "--seed", "1"), "lab replay: missing --profile, --fault, --refresh"),
        (("replay", "--target", "examples/foreign-app.toml", "--seed", "1"), "lab replay: missing --trial"),
        (
            ("replay", "--target", "examples/foreign-app.toml", "--trial", "e1-x-settled-00", "--profile", "correct")
            + ("--mode", "compose", "--seed", "1"),
            "lab replay: --profile, --mode with --target",
        ),
        (
            ("replay", "--target", "examples/foreign-app.toml", "--trial", "x1-none-settled-00", "--seed", "1"),
            "--trial 'x1-none-settled-00' is not a trial id of lab investigate",
        ),
        (
            ("replay", "--target", "examples/foreign-app.toml", "--trial", "e99-none-settled-00", "--seed", "1"),
            "--trial 'e99-none-settled-00': no experiment e99 with --turns 3",
        ),
        (("replay", "--target", "no/such.toml", "--trial", "e1-none-settled-00", "--seed", "1"), "cannot read target"),
        (("window", "--profile", "fire_and_forget", "--vary", "moon"), "unknown sweep variable 'moon'"),
        (("window", "--profile", "nope", "--vary", "turns"), "unknown defect(s) nope"),
        (("window", "--profile", "correct", "--vary", "turns"), "a window is the defect's"),
        (("window", "--profile", "fire_and_forget", "--vary", "refresh_delay_ms", "--values", ","), "no value given"),
        (
            ("window", "--profile", "ttl_set_once", "--vary", "age_ttl_pct", "--fault", "latency"),
            "runs under the fault ttl_elapse",
        ),
        (
            ("window", "--profile", "fire_and_forget", "--vary", "turns", "--values", "1,500"),
            "turns=500 is out of range",
        ),
        (
            ("window", "--target", "examples/foreign-app.toml", "--vary", "age_ttl_pct"),
            "swept by refresh_delay_ms, tab_gap_ms, turns",
        ),
        (("window", "--target", "no/such.toml", "--vary", "refresh_delay_ms"), "cannot read target spec no/such.toml"),
        (("window", "--profile", "ttl_set_once", "--target", "x.toml", "--vary", "turns"), "not allowed with argument"),
        (("lesson", "3", "--window"), "lesson 3 has no curve of its own"),
        (("lesson", "3", "--window", "--check"), "not allowed with argument"),
    ],
)
def test_bad_chaos_input_exits_2_before_starting_anything(args: tuple[str, ...], fragment: str, tmp_path: Path) -> None:
    res = lab(*args, tmp=tmp_path)
    assert res.returncode == 2, res.stderr
    assert fragment in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "run").exists(), "nothing may start on bad input"


def test_empty_make_variables_mean_defaults(tmp_path: Path) -> None:
    """make passes TRIALS= and SEED= as empty strings; they must not be errors."""
    from lab.cli import build_parser
    from lab.plan.shard import from_arg

    args = build_parser().parse_args(
        ["chaos", "--trials", "", "--seed", "", "--only", "", "--shard", "", "--max-trials", ""]
    )
    assert (args.trials, args.seed, args.only, args.max_trials) == (None, None, "", None)
    assert from_arg(args.shard) is None and from_arg(" ") is None and from_arg("2/3") == (2, 3)


def test_faults_and_defects_are_listed(tmp_path: Path) -> None:
    faults = lab("faults", tmp=tmp_path)
    assert faults.returncode == 0 and "latency" in faults.stdout and "latency_ms=500" in faults.stdout
    defects = lab("defects", tmp=tmp_path)
    assert "fire_and_forget" in defects.stdout and "incident profile:" in defects.stdout


@pytest.mark.parametrize(
    "args, fragment",
    [
        (("investigate", "--target", "no/such.toml"), "cannot read target spec no/such.toml"),
        (
            ("investigate", "--target", "examples/chat-service.toml", "--set", "history.order=sideways"),
            "history.order = 'sideways' is not valid; expected one of oldest_first, newest_first",
        ),
        (("investigate", "--target", "examples/chat-service.toml", "--set", "nodot"), "is not KEY=VALUE"),
        (("investigate", "--target", "examples/chat-service.toml", "--only", "warp"), "unknown experiment(s) warp"),
        (
            ("investigate", "--target", "examples/foreign-app.toml", "--only", "mid_stream"),
            "mid_stream needs a [stream] or [transport] section",
        ),
        (
            ("investigate", "--target", "examples/foreign-app.toml", "--set", "page.order=random"),
            "page.order = 'random' is not valid",
        ),
    ],
)
def test_bad_investigate_input_exits_2_before_starting_anything(
    args: tuple[str, ...], fragment: str, tmp_path: Path
) -> None:
    res = lab(*args, tmp=tmp_path)
    assert res.returncode == 2, res.stderr
    assert fragment in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "run-investigate").exists(), "nothing may start on bad input"


def test_investigate_help_teaches(tmp_path: Path) -> None:
    res = lab("investigate", "--help", tmp=tmp_path)
    assert res.returncode == 0
    for fragment in (
        "Toxiproxy",
        "no anomaly found",
        "--set start.env.CHAT_DEFECTS",
        "Exit status",
        "docs/investigate.md",
    ):
        assert fragment in res.stdout, fragment


def test_each_lessons_curve_is_a_valid_window_command() -> None:
    """`lab lesson N --window` runs `lab window` with the lesson's own arguments: they parse."""
    import shlex

    from lab.cli import build_parser
    from lab.lessons.base import REGISTRY

    with_curve = [x for x in REGISTRY.values() if x.window]
    assert sorted(x.number for x in with_curve) == [1, 2, 8]
    for x in with_curve:
        assert build_parser().parse_args(["window", *shlex.split(x.window)]).command == "window"
