"""`lab investigate` on the built-in chat service as a black box (examples/chat-service.toml):
each single defect, switched on by the service's own configuration (CHAT_DEFECTS), gets its
diagnosis; the correct profile gets "no anomaly found". Smoke-sized: 1-2 trials per experiment.
The full run: `lab investigate --target examples/chat-service.toml --trials 20` (docs/investigate.md)."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
import re
import signal
import socket
import subprocess
from pathlib import Path

import pytest

from lab.stack import procs
from tests.cleanup import lab_down_after
from tests.e2e.investigating import EXAMPLE, investigate_env, investigate
from tests.e2e.investigating import FOREIGN, api_spec, applies_not, assert_nothing_left
from tests.helpers import run_lab, start_lab

# Each defect of the built-in service, and the diagnosis that must name it (all eight).
EXPECTED = {
    "fire_and_forget": "replies_not_stored",
    "ttl_set_once": "ttl_not_renewed",
    "shared_loop_client": "phantom_failures",
    "blind_retry": "duplicates_after_drop",
    "swallowed_errors": "acked_while_unreachable",
    "session_cookie": "session_cookie",
    "save_at_stream_end": "saved_at_stream_end",
    "read_modify_write": "lost_update",
}
# The default plan's experiment that exposes each defect (--only): the whole plan's judgement of
# the built-in service is test_correct_profile_no_anomaly_found's; here, two trials of the one
# experiment keep each defect's test to a quarter of the whole plan's time.
EXPOSED_BY = {
    "fire_and_forget": "after_ack",
    "ttl_set_once": "browser_restart",
    "shared_loop_client": "settled",
    "blind_retry": "drop",
    "swallowed_errors": "down",
    "session_cookie": "browser_restart",
    "save_at_stream_end": "mid_stream",
    "read_modify_write": "two_tabs",
}


def test_correct_profile_no_anomaly_found(tmp_path: Path) -> None:
    code, out, results = investigate(tmp_path, "--trials", "2")
    assert code == 0, out
    assert "No anomaly found in 24 judged trials (2 unknown)" in out
    assert re.search(r"acknowledged turns lost: 0/24 trials, rate < \d+%", out), out
    assert results["diagnoses"] == [] and results["verdict"] == "no anomaly found"
    # The service stores a turn before it streams: nothing to refuse once its answer has begun.
    (na,) = [c for c in results["cells"] if applies_not(c)]
    assert dict(na["fault_params"]) == {"at": "answer"} and na["unknown"] == 2, na
    assert all(c["status"] == "valid" and c["trials"] == 2 for c in results["cells"] if c is not na), results["cells"]
    # [source] services/chat: every defect module's line is a suspect, none proven; each one the
    # default plan can judge is cleared with its bound.
    lines = results["suspects"]["suspects"]
    assert lines and not [x for x in lines if x["status"] in ("proven", "one of")], lines
    assert {x["check"] for x in lines if x["status"] == "not proven"} >= {"dangling_task", "session_cookie"}, lines
    assert "proven: none" in out
    assert results["bounds"]["lost"] == {"k": 0, "n": 24, "upper95": pytest.approx(0.138, abs=1e-3)}
    # The mid-stream experiment really cut the last reply of each trial.
    trials = json.loads(results_files(tmp_path)[-1].with_name("trials.json").read_text())
    # (judged ones: a cut after the reply ended is unknown, and replaced by another trial)
    cut = [t["sends"][-1]["cut"] for t in trials if t["refresh"] == "mid_stream" and not t.get("unknown")]
    assert cut == [True, True], cut
    # Double submits with an id: both requests in flight together, stored once.
    doubles = [t for t in trials if t["refresh"] == "double_submit" and not t.get("unknown")]
    assert len(doubles) == 2 and all(t["concurrent"]["in_flight_together"] for t in doubles), doubles
    assert all(len({s["id"] for s in t["sends"] if s["turn"] == 3}) == 1 for t in doubles)
    # Two tabs: two messages, both in flight together (the browser's view of a black box).
    tabs = [t for t in trials if t["refresh"] == "two_tabs" and not t.get("unknown")]
    assert len(tabs) == 2 and all(t["concurrent"]["in_flight_together"] for t in tabs), tabs
    # A reload mid-write: the last send aborted inside its writes, every earlier turn on the page.
    mid = [t for t in trials if t["refresh"] == "in_flight" and not t.get("unknown")]
    assert len(mid) == 2 and all(t["sends"][-1]["reason"] == "reloaded while in flight" for t in mid), mid
    assert all(len(t["page_after_refresh"]) >= 4 for t in mid), mid  # turns 1 and 2, both rows each
    report = Path(results_files(tmp_path)[-1]).parent / "report.html"
    assert "no anomaly found" in report.read_text()
    suite = ET.parse(report.with_name("junit.xml")).getroot()
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("13", "0", "0")  # one per experiment


def results_files(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "reports").glob("*/results.json"))


@pytest.mark.parametrize("defect", list(EXPECTED), ids=list(EXPECTED))
def test_single_defect_is_diagnosed(tmp_path: Path, defect: str) -> None:
    code, out, results = investigate(
        tmp_path, "--only", EXPOSED_BY[defect], "--trials", "2", "--set", f"start.env.CHAT_DEFECTS={defect}"
    )
    assert code == 1, out
    found = {d["code"]: d for d in results["diagnoses"]}
    assert EXPECTED[defect] in found, out
    d = found[EXPECTED[defect]]
    # Truthful: each diagnosis carries its numbers and the trials that show it.
    assert 1 <= d["k"] <= d["n"] and len(d["trials"]) == d["k"], d
    assert any(t in d["evidence"] for t in d["trials"]), d
    assert f"[{EXPECTED[defect]}]" in out
    # The line that does it: every proven suspect lies in the defect's own module.
    proven = [x for x in results["suspects"]["suspects"] if x["status"] == "proven"]
    assert proven and {x["path"] for x in proven} == {f"services/chat/defects/{defect}.py"}, proven
    html = (results_files(tmp_path)[-1].parent / "report.html").read_text()
    assert f"<td><code>services/chat/defects/{defect}.py:{proven[0]['line']}</code>" in html
    assert f"data-diagnosis='{EXPECTED[defect]}'" in html
    assert f"data-trial='{d['trials'][0]}'" in html  # its evidence, turn by turn
    # junit.xml: the experiments whose trials show it fail, naming the diagnosis.
    suite = ET.parse(results_files(tmp_path)[-1].with_name("junit.xml")).getroot()
    failed = [f.get("message", "") for f in suite.iter("failure")]
    assert any(EXPECTED[defect] in m for m in failed), failed


def test_a_refused_write_answered_success_points_at_two_kinds_of_line(tmp_path: Path) -> None:
    """Redis refuses the send's first write and serves reads: the service that logs the store's
    error and answers 200 loses the message -- acked_write_refused. A swallowed error and a write
    left to a task leave that alike: with lines of both kinds in services/chat, each is "one of",
    neither proven (the correct profile answers an error there: test_correct_profile_no_anomaly_found)."""
    code, out, results = investigate(
        tmp_path, "--only", "write_refused", "--trials", "2", "--set", "start.env.CHAT_DEFECTS=swallowed_errors"
    )
    assert code == 1, out
    (d,) = results["diagnoses"]
    assert (d["code"], d["k"], d["n"]) == ("acked_write_refused", 2, 2), d
    assert "Redis refused SADD" in d["evidence"] and "the question" in d["evidence"], d
    lines = results["suspects"]["suspects"]
    one_of = {x["check"]: x["path"] for x in lines if x["status"] == "one of"}
    assert one_of == {
        "swallowed_error": "services/chat/defects/swallowed_errors.py",
        "dangling_task": "services/chat/defects/fire_and_forget.py",
    }, lines
    assert not [x for x in lines if x["status"] == "proven"] and "  one of (2):" in out, out


def test_foreign_app_newest_first_strings_no_ids_no_health_no_anomaly(tmp_path: Path) -> None:
    """A correct app in another style (examples/foreign_app.py), driven through its own page by
    the spec's selectors: the spec copes, nothing is raised, and what the page showed after each
    refresh was read from its DOM (rows with the app's own role names)."""
    code, out, results = investigate(tmp_path, "--trials", "1", spec=FOREIGN)
    assert code == 0, out
    assert results["diagnoses"] == [] and "No anomaly found in 10 judged trials" in out
    assert results["page"] == "app" and "driving the app's own page / by its selectors" in out
    trials = json.loads(results_files(tmp_path)[-1].with_name("trials.json").read_text())
    shown = trials[0]["page_after_refresh"]
    # The app's roles ("bot") as the lab's ("assistant"), its rows without ids, matched by text.
    assert [r["role"] for r in shown] == ["user", "assistant"] * 3, shown
    assert [r["id"] for r in shown] == [""] * 6 and trials[0]["sends"][0]["text"] in shown[0]["text"], shown


def test_app_page_selector_that_matches_nothing(tmp_path: Path) -> None:
    """A [page] selector that finds no element stops the run as a spec error naming it."""
    code, out, results = investigate(tmp_path, "--set", "page.input=#no-such-box", spec=FOREIGN)
    assert code == 2, out
    assert "no element for page.input = '#no-such-box'" in out and "fix [page] in the spec" in out, out
    assert results == {}


def test_target_answering_outside_its_spec(tmp_path: Path) -> None:
    """The foreign app wants {"text": ...}: a spec naming another field gets its 400, and the
    message says what was sent, what came back and what was expected."""
    code, out, results = investigate(tmp_path, "--set", "chat.message_field=message", spec=api_spec(tmp_path))
    assert code == 2, out
    assert "the target answers outside its spec" in out
    assert "POST /api/send {'message': ...} answered 400" in out and "expected 2xx" in out, out
    assert results == {}


@pytest.mark.parametrize(
    "sig,group", [(signal.SIGINT, True), (signal.SIGTERM, False)], ids=["ctrl-c-to-the-group", "SIGTERM"]
)
def test_interrupted_run_leaves_nothing_running(tmp_path: Path, sig: signal.Signals, group: bool) -> None:
    """A signal once the target is up and trials run: the partial report is written and the
    target, Redis and Toxiproxy are stopped. Ctrl-C in a terminal reaches the whole process
    group (the lab and Playwright's driver and Chromium), SIGTERM only the lab."""
    env, target_port = investigate_env(tmp_path)
    with lab_down_after(env):  # also when the signal step fails and `lab` is SIGKILLed below
        proc = start_lab(
            "investigate",
            "--target",
            str(EXAMPLE),
            "--set",
            f"http.port={target_port}",
            "--trials",
            "5",
            "--reports",
            str(tmp_path / "reports"),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        lines = []
        try:
            assert proc.stdout is not None
            for line in proc.stdout:  # wait on the run's own progress, not on a timer
                lines.append(line)
                if "none/settled/t3: 5 trials" in line:
                    break
            if group:
                os.killpg(proc.pid, sig)
            else:
                proc.send_signal(sig)
            out = "".join(lines) + proc.communicate(timeout=120)[0]
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 128 + sig, out  # 130 for SIGINT, 143 for SIGTERM (lab.common.signals)
        assert_nothing_left(tmp_path / "run-investigate", out)
        assert not _port_accepts(target_port), out
        results = json.loads(results_files(tmp_path)[-1].read_text())
        assert results["interrupted"] is True and results["cells"][0]["trials"] == 5, results


def _port_accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def test_lab_down_cleans_up_after_a_killed_investigation(tmp_path: Path) -> None:
    """SIGKILL gives the lab no chance to clean up: `lab down` stops what it left (the target,
    Redis and Toxiproxy, recorded by pidfiles in the investigation's run folder)."""
    env, target_port = investigate_env(tmp_path)
    with lab_down_after(env):  # the test's own `lab down` may not be reached
        proc = start_lab(
            "investigate",
            "--target",
            str(EXAMPLE),
            "--set",
            f"http.port={target_port}",
            "--reports",
            str(tmp_path / "reports"),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        lines = []
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                lines.append(line)
                if "target ready" in line:
                    break
        finally:
            proc.kill()  # the test's own SIGKILL, also when the wait above is cut short
            proc.communicate(timeout=60)
        run_dir = tmp_path / "run-investigate"
        assert any(p.alive() for p in procs.recorded(run_dir)), "".join(lines)
        down = run_lab(env, "down", timeout=120)
        assert down.returncode == 0 and "investigate: target" in down.stdout, down.stdout + down.stderr
        assert_nothing_left(run_dir, down.stdout)
        assert not _port_accepts(target_port)
