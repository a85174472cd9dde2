"""A login's secrets in no file and no terminal of any command that starts a target and logs
in: `lab init` (its probe logs in with the draft's {env:NAME} values), `lab investigate` of the
draft it wrote, `lab window --target` and `pytest --lab-target` (a user's own test that logs
in), each against examples/fastapi_chat.py printing every login's body and token to its log
(FASTAPI_LOG_LOGINS=1). After each, the test's whole folder -- the lab's run folder with the
target's log, the reports, the draft, the trials' records -- and the captured terminal are
grepped for the password; the log's login lines show it redacted, and the token with it where
the lab saw the login's answer."""

from __future__ import annotations

import re
import secrets
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.cleanup import lab_down_after
from tests.e2e.test_init import _init
from tests.e2e.investigating import ROOT, assert_nothing_left, investigate_env, investigate
from tests.helpers import run_lab

REST = ROOT / "examples" / "fastapi-rest.toml"
LOGIN_LINE = re.compile(r"login \{'username': 'ada', 'password': '\[redacted\]'\} -> token (\S+)")


@pytest.fixture
def password(monkeypatch: pytest.MonkeyPatch) -> str:
    """The FastAPI example's one login, and the same values for a drafted spec's {env:NAME}."""
    pw = "pw-" + secrets.token_hex(12)
    for name, value in {"CHAT_USER": "ada", "CHAT_PASSWORD": pw, "LAB_LOGIN_USERNAME": "ada"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LAB_LOGIN_PASSWORD", pw)
    return pw


def _no_leak(tmp_path: Path, secret: str, out: str) -> list[str]:
    """The target's login lines, after checking no file under ``tmp_path`` (contents or name)
    and not the terminal holds ``secret``."""
    assert secret not in out, out
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    leaks = [p for p in written if secret.encode() in p.read_bytes() or secret in p.name]
    assert not leaks, leaks
    logs = [p.read_text() for p in written if p.name == "target.log"]
    lines = [x for text in logs for x in text.splitlines() if x.startswith("login ")]
    assert lines, logs  # the app did print its logins: the redaction had something to do
    assert all(LOGIN_LINE.fullmatch(x) for x in lines), lines
    return lines


def test_lab_init_and_lab_investigate_of_its_draft_keep_the_login_secret(tmp_path: Path, password: str) -> None:
    """`lab init --no-check` leaves its probe's target log in the run folder (a check would start
    the target again, and its log anew); then `lab investigate` of the draft, unedited."""
    code, out, text = _init(
        tmp_path, "{python} examples/fastapi_chat.py", "--env", "FASTAPI_LOG_LOGINS=1", "--no-check"
    )
    assert code == 0, out
    assert tomllib.loads(text)["auth"]["body"]["password"] == "{env:LAB_LOGIN_PASSWORD}", text
    lines = _no_leak(tmp_path, password, out)
    assert all(x.endswith("-> token [redacted]") for x in lines), lines  # the probe's token
    code, out, results = investigate(tmp_path, "--trials", "1", "--only", "none", spec=tmp_path / "drafted.toml")
    # Found nothing; a trial a busy machine could not judge (exit 3) is not this test's claim.
    assert code in (0, 3) and results["diagnoses"] == [], out
    lines = _no_leak(tmp_path, password, out)
    assert all(x.endswith("-> token [redacted]") for x in lines), lines  # the run's token


def test_lab_window_keeps_the_login_secret(tmp_path: Path, password: str) -> None:
    env, port = investigate_env(tmp_path)
    sets = [x for s in (f"http.port={port}", "start.env.FASTAPI_LOG_LOGINS=1") for x in ("--set", s)]
    args = ["--vary", "turns", "--values", "2", "--max-trials", "2", "--seed", "11"]
    with lab_down_after(env):  # the target, Redis and Toxiproxy of a timed-out run
        p = run_lab(env, "window", "--target", str(REST), *sets, *args, "--reports", str(tmp_path / "reports"))
        out = p.stdout + p.stderr
        assert_nothing_left(tmp_path / "run-investigate", out)
    assert p.returncode in (0, 3), out  # 3: its trials unjudged on a busy machine, not this test's claim
    assert list((tmp_path / "reports").glob("*-window-fastapi-rest/results.json")), out
    lines = _no_leak(tmp_path, password, out)
    assert all(x.endswith("-> token [redacted]") for x in lines), lines


USER_TEST = '''
import os

def test_logs_in(page):
    page.goto("/")
    status = page.evaluate(
        """([u, p]) => fetch("/api/login", {method: "POST", headers: {"Content-Type": "application/json"},
                                          body: JSON.stringify({username: u, password: p})}).then(r => r.status)""",
        [os.environ["CHAT_USER"], os.environ["CHAT_PASSWORD"]],
    )
    assert status == 200
'''


def test_pytest_lab_target_keeps_the_login_secret(tmp_path: Path, password: str) -> None:
    """A user's own test logs in through the page (the browser's request, seen by the recorder):
    its record, the target's log and the terminal summary hold neither the password nor the
    token."""
    user = tmp_path / "user"
    user.mkdir()
    (user / "test_login.py").write_text(USER_TEST)
    env, port = investigate_env(tmp_path)
    cmd = [sys.executable, "-m", "pytest", str(user), "--lab-target", str(REST), "-p", "no:cacheprovider"]
    cmd += ["--lab-set", f"http.port={port}", "--lab-set", "start.env.FASTAPI_LOG_LOGINS=1", "-p", "no:xdist"]
    cmd += ["--rootdir", str(user), "--output", str(tmp_path / "out"), "-q"]
    with lab_down_after(env):  # the plugin's Redis, Toxiproxy and app of a timed-out pytest
        p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        out = p.stdout + p.stderr
        assert_nothing_left(tmp_path / "run-investigate", out)
    assert p.returncode == 0, out
    assert "chaoslab: the lab's judgement of the recorded tests" in out, out
    assert list((tmp_path / "out" / "lab").glob("*/trial.json")), out
    lines = _no_leak(tmp_path, password, out)
    assert all(x.endswith("-> token [redacted]") for x in lines), lines  # the recorder saw the login's answer
