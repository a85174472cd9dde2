"""`lab up` / `lab down` as a user runs them: each test starts its own stack on free ports in its
own run folder, and checks that nothing is left running afterwards."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.common.config import ROOT
from lab.stack import procs
from lab.common.wait import wait_until
from tests.helpers import isolated_env, run_lab, start_lab


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    e = isolated_env(tmp_path / "run")
    yield e
    # Whatever a test did, leave nothing behind.
    run_lab(e, "down", timeout=60)


def lab(env: dict[str, str], *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return run_lab(env, *args, timeout=timeout)


def _pids(run_dir: Path) -> dict[str, procs.ProcInfo]:
    return {p.name: p for p in procs.recorded(run_dir)}


def _assert_nothing_left(infos: list[procs.ProcInfo]) -> None:
    assert infos, "the test must have seen processes to check"
    for info in infos:
        wait_until(lambda: not info.alive(), what=f"{info.name} pid {info.pid} gone", timeout_s=10)
        assert procs.group_members(info.pid) == [], f"{info.name}'s process group outlived it"


def test_up_prints_endpoints_then_down_leaves_no_process(env: dict[str, str]) -> None:
    up = lab(env, "up")
    assert up.returncode == 0, up.stderr
    assert f"http://127.0.0.1:{env['LAB_CHAT_PROXY_PORT']}" in up.stdout
    run_dir = Path(env["LAB_RUN_DIR"])
    infos = list(_pids(run_dir).values())
    assert sorted(i.name for i in infos) == ["backend", "redis", "toxiproxy"]
    assert all(i.alive() for i in infos)

    status = lab(env, "status", "--json")
    assert status.returncode == 0
    st = json.loads(status.stdout)
    assert st["up"] and st["healthy"]

    down = lab(env, "down")
    assert down.returncode == 0, down.stderr
    _assert_nothing_left(infos)
    assert lab(env, "status").returncode == 3


def test_up_twice_reuses_the_running_stack(env: dict[str, str]) -> None:
    assert lab(env, "up").returncode == 0
    first = {n: i.pid for n, i in _pids(Path(env["LAB_RUN_DIR"])).items()}
    again = lab(env, "up")
    assert again.returncode == 0 and "reused" in again.stdout
    assert {n: i.pid for n, i in _pids(Path(env["LAB_RUN_DIR"])).items()} == first


def _stalled_topology(tmp: Path) -> Path:
    """toxiproxy.json with the chat proxy disabled: start-up then waits (until its deadline) for
    the backend through Toxiproxy, with all three processes running -- a window to signal in."""
    data = json.loads((ROOT / "toxiproxy.json").read_text())
    for p in data:
        if p["name"] == "chat":
            p["enabled"] = False
    path = tmp / "stalled-toxiproxy.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_during_start_up_leaves_no_process(env: dict[str, str], tmp_path: Path, sig: signal.Signals) -> None:
    env["LAB_TOPOLOGY"] = str(_stalled_topology(tmp_path))
    run_dir = Path(env["LAB_RUN_DIR"])
    proc = start_lab("up", "--timeout", "120", env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        infos = wait_until(
            lambda: (lambda d: list(d.values()) if len(d) == 3 and all(i.alive() for i in d.values()) else None)(
                _pids(run_dir)
            ),
            what="all three services started",
            timeout_s=60,
        )
        proc.send_signal(sig)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 128 + sig, err
    assert f"{sig.name} during start-up" in err
    _assert_nothing_left(infos)
    assert _pids(run_dir) == {}


def test_down_cleans_up_after_a_killed_lab(env: dict[str, str], tmp_path: Path) -> None:
    env["LAB_TOPOLOGY"] = str(_stalled_topology(tmp_path))
    run_dir = Path(env["LAB_RUN_DIR"])
    proc = start_lab("up", "--timeout", "120", env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    infos = wait_until(
        lambda: (lambda d: list(d.values()) if len(d) == 3 and all(i.alive() for i in d.values()) else None)(
            _pids(run_dir)
        ),
        what="all three services started",
        timeout_s=60,
    )
    proc.kill()  # SIGKILL: no clean-up ran
    proc.wait(timeout=30)
    assert all(i.alive() for i in infos), "the services outlive a killed lab"
    down = lab(env, "down")
    assert down.returncode == 0, down.stderr
    _assert_nothing_left(infos)


def test_port_in_use_is_named(env: dict[str, str]) -> None:
    port = int(env["LAB_REDIS_PORT"])
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
        s.listen()
        up = lab(env, "up")
    assert up.returncode == 2
    assert f"port {port} (LAB_REDIS_PORT) is in use" in up.stderr
    assert "pytest" in up.stderr or "python" in up.stderr  # who holds it
    assert procs.recorded(Path(env["LAB_RUN_DIR"])) == []


@pytest.mark.parametrize("content, fragment", [("{oops", "is not valid JSON"), ("[]", "missing proxy redis, chat")])
def test_malformed_topology_starts_nothing(env: dict[str, str], tmp_path: Path, content: str, fragment: str) -> None:
    bad = tmp_path / "toxiproxy.json"
    bad.write_text(content)
    env["LAB_TOPOLOGY"] = str(bad)
    up = lab(env, "up")
    assert up.returncode == 2 and fragment in up.stderr
    assert "Traceback" not in up.stderr
    assert procs.recorded(Path(env["LAB_RUN_DIR"])) == []


@pytest.mark.parametrize(
    "args, fragment",
    [
        (("up", "--mode", "kubernetes"), "unknown mode 'kubernetes'; valid: native, compose"),
        (("frobnicate",), "invalid choice: 'frobnicate'"),
    ],
)
def test_bad_cli_input_exits_2_naming_valid_values(env: dict[str, str], args: tuple[str, ...], fragment: str) -> None:
    res = lab(env, *args)
    assert res.returncode == 2 and fragment in res.stderr


def test_bad_port_variable_exits_2(env: dict[str, str]) -> None:
    env["LAB_CHAT_PROXY_PORT"] = "6000"
    res = lab(env, "up")
    assert res.returncode == 2
    assert "LAB_CHAT_PROXY_PORT=6000 is a port Chromium refuses" in res.stderr


def test_a_stack_running_older_backend_code_is_restarted_not_reused(env: dict[str, str]) -> None:
    assert lab(env, "up").returncode == 0
    run_dir = Path(env["LAB_RUN_DIR"])
    state = json.loads((run_dir / "stack.json").read_text())
    state["code"] = "older-code"
    (run_dir / "stack.json").write_text(json.dumps(state))
    before = _pids(run_dir)["backend"].pid
    again = lab(env, "up")
    assert again.returncode == 0 and "reused" not in again.stdout
    assert _pids(run_dir)["backend"].pid != before
