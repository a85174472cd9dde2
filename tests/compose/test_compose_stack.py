"""Compose mode for real: `lab up --mode compose` on a (private, if need be) Docker engine with
offline images, the same endpoints and topology as native mode, and nothing left after down."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import requests

from lab.common.config import PORT_ENV, ROOT
from lab.stack.toxiproxy import Toxiproxy
from tests.cleanup import lab_down_after
from tests.helpers import isolated_env, run_lab, start_lab


def lab(env: dict[str, str], *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return run_lab(env, *args, timeout=timeout)


def _env(run_dir: Path) -> dict[str, str]:
    # Its own engine data root: never shares an engine with a developer's compose stack.
    return isolated_env(run_dir, LAB_DOCKER_ROOT=str(ROOT / ".lab" / "docker-tests"))


@pytest.fixture(scope="module")
def compose_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    env = _env(tmp_path_factory.mktemp("compose-run"))
    env["_LINKS_BEFORE"] = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    with lab_down_after(env, "--mode", "compose"):  # also after a failed or timed-out up
        up = lab(env, "up", "--mode", "compose")
        assert up.returncode == 0, up.stdout + up.stderr
        env["_UP_STDOUT"] = up.stdout
        yield env


def _url(env: dict[str, str], name: str) -> str:
    return f"http://127.0.0.1:{env[PORT_ENV[name]]}"


def test_up_prints_the_same_endpoints_as_native(compose_env: dict[str, str]) -> None:
    out = compose_env["_UP_STDOUT"]
    for name in ("chat_proxy", "toxiproxy", "redis_proxy", "redis", "backend"):
        assert f"127.0.0.1:{compose_env[PORT_ENV[name]]}" in out
    st = json.loads(lab(compose_env, "status", "--mode", "compose", "--json").stdout)
    assert st["up"] and st["healthy"]


def test_the_topology_is_the_native_one(compose_env: dict[str, str]) -> None:
    r = redis.Redis(port=int(compose_env[PORT_ENV["redis_proxy"]]), socket_timeout=5)
    assert r.ping()
    assert Toxiproxy(_url(compose_env, "toxiproxy")).version() == "2.12.0"
    s = requests.Session()
    resp = s.post(_url(compose_env, "chat_proxy") + "/chat", json={"message": "my name is Ona"}, timeout=30)
    assert resp.status_code == 200
    truth = redis.Redis(port=int(compose_env[PORT_ENV["redis"]]), socket_timeout=5)
    assert truth.llen(f"chat:{resp.json()['session_id']}") == 2


def test_backend_reaches_redis_only_through_toxiproxy(compose_env: dict[str, str]) -> None:
    t = Toxiproxy(_url(compose_env, "toxiproxy"))
    t.set_enabled("redis", False)
    try:
        resp = requests.post(_url(compose_env, "chat_proxy") + "/chat", json={"message": "hi"}, timeout=30)
        assert resp.status_code == 503 and resp.json()["error"] == "store_unavailable"
    finally:
        t.set_enabled("redis", True)


def test_redis_is_unreachable_from_the_backends_network(compose_env: dict[str, str]) -> None:
    """Inside the chat container, the name "redis" does not resolve and nothing answers: the
    only way to Redis is the toxiproxy service."""
    state = json.loads((Path(compose_env["LAB_RUN_DIR"]) / "stack.json").read_text())
    env = {**compose_env, "DOCKER_HOST": state["docker_host"], "COMPOSE_PROJECT_NAME": state["project"]}
    probe = (
        "import socket,sys\n"
        "def ok(h,p):\n"
        "    try: socket.create_connection((h,p),timeout=3).close(); return True\n"
        "    except OSError: return False\n"
        "sys.exit(0 if (not ok('redis',6379)) and ok('toxiproxy',16380) else 1)"
    )
    res = subprocess.run(
        ["docker-compose", "-f", str(ROOT / "compose.yaml"), "exec", "-T", "chat", "/opt/venv/bin/python", "-c", probe],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert res.returncode == 0, res.stdout + res.stderr


def test_toxiproxy_faults_work_unchanged(compose_env: dict[str, str]) -> None:
    t = Toxiproxy(_url(compose_env, "toxiproxy"))
    r = redis.Redis(port=int(compose_env[PORT_ENV["redis_proxy"]]), socket_timeout=5)
    r.ping()
    t.add_toxic("redis", "lat", "latency", "downstream", {"latency": 200})
    try:
        t0 = time.monotonic()
        r.ping()
        assert (time.monotonic() - t0) * 1000 >= 200
    finally:
        t.remove_toxic("redis", "lat")


def test_backend_events_are_followed_into_the_run_folder(compose_env: dict[str, str]) -> None:
    log = Path(compose_env["LAB_RUN_DIR"]) / "backend-log.log"
    requests.post(_url(compose_env, "chat_proxy") + "/chat", json={"message": "hi", "id": "follow-1"}, timeout=30)
    from lab.common.wait import wait_until

    wait_until(lambda: '"id": "follow-1"' in log.read_text(), what="event in the followed log", timeout_s=30)


def test_down_leaves_no_engine_container_or_bridge(compose_env: dict[str, str]) -> None:
    """Last in this module (pytest keeps file order): down, then nothing of ours is left."""
    run_dir = Path(compose_env["LAB_RUN_DIR"])
    pidfile = run_dir / "dockerd.pid"
    pid = json.loads(pidfile.read_text())["pid"] if pidfile.exists() else None
    down = lab(compose_env, "down", "--mode", "compose")
    assert down.returncode == 0 and "compose project" in down.stdout, down.stderr
    if pid is not None:  # we started a private engine: it must be gone
        from lab.common.wait import wait_until

        wait_until(
            lambda: not Path(f"/proc/{pid}").exists() or Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] == "Z",
            what="private dockerd gone",
            timeout_s=30,
        )
        assert not pidfile.exists()

    # Interfaces the run created must be gone (compare names with those before it).
    def names(text: str) -> set[str]:
        return {line.split(": ")[1].split("@")[0] for line in text.splitlines() if ": " in line}

    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert names(links) - names(compose_env["_LINKS_BEFORE"]) == set()
    assert not list(Path("/run").glob("chaoslab-*"))
    st = lab(compose_env, "status", "--mode", "compose", "--json")
    assert st.returncode == 3 and json.loads(st.stdout)["up"] is False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_during_compose_up_leaves_nothing(tmp_path: Path, sig: signal.Signals) -> None:
    """Ctrl-C (or SIGTERM) while the compose stack is starting: exit 128+N, the private engine
    stopped, no pidfile, no network interface left that the run created."""
    env = _env(tmp_path / "run")
    before = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    # `lab down` afterwards whatever happens: the finally below SIGKILLs a `lab` that outlived
    # the signal, which leaves its private dockerd and containerd running.
    with lab_down_after(env, "--mode", "compose"):
        _signal_during_up(tmp_path, env, sig, before)


def _pid_in(pidfile: Path) -> int | None:
    """The pid a pidfile records, None until it exists and parses. The lab writes it atomically;
    waiting for it to parse keeps the test right even where a pidfile is written in two steps."""
    try:
        return int(json.loads(pidfile.read_text())["pid"])
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return None


def _signal_during_up(tmp_path: Path, env: dict[str, str], sig: signal.Signals, before: str) -> None:
    proc = start_lab("up", "--mode", "compose", env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    from lab.common.wait import wait_until

    pidfile = tmp_path / "run" / "dockerd.pid"
    try:
        wait_until(
            lambda: _pid_in(pidfile) is not None or proc.poll() is not None,
            what="the private engine started (dockerd.pid recorded)",
            timeout_s=120,
        )
        assert proc.poll() is None, "start-up must still be running when the signal is sent"
        pid = _pid_in(pidfile)
        proc.send_signal(sig)
        _out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 128 + sig, err
    assert f"{sig.name} during start-up" in err
    wait_until(
        lambda: not Path(f"/proc/{pid}").exists() or Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] == "Z",
        what="private dockerd gone",
        timeout_s=60,
    )
    assert not list((tmp_path / "run").glob("*.pid"))
    mounts = Path("/proc/mounts").read_text()
    assert str(ROOT / ".lab" / "docker-tests") not in mounts and "/run/chaoslab-" not in mounts

    def names(text: str) -> set[str]:
        return {line.split(": ")[1].split("@")[0] for line in text.splitlines() if ": " in line}

    after = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert names(after) - names(before) == set()


def test_a_port_already_taken_is_named_and_nothing_starts(tmp_path: Path) -> None:
    env = _env(tmp_path / "run")
    port = int(env["LAB_CHAT_PROXY_PORT"])
    with lab_down_after(env, "--mode", "compose"):  # in case it did start something after all
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))
            s.listen()
            res = lab(env, "up", "--mode", "compose", timeout=120)
        assert res.returncode == 2
        assert f"port {port} (LAB_CHAT_PROXY_PORT) is in use" in res.stderr
        assert not list((tmp_path / "run").glob("*.pid"))
