"""`lab investigate` on an app's own compose file (examples/compose-app: Express + ioredis and
Redis with AOF on a named volume), the file unedited: no anomaly without its bug, the bug's
diagnosis with it (through both routes: the backend's REDIS_URL overridden, or the host name
`redis` taken over), and afterwards nothing the lab made -- no container, network or volume on
the engine, the app's file byte-identical -- also after SIGTERM or Ctrl-C mid-run.

The engine is one the module starts and keeps (DOCKER_HOST), as a user's system engine is: the
lab must leave it as it found it, and `docker ps -a` can be asked afterwards."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.common.config import ROOT, LabConfig
from lab.common.wait import wait_until
from lab.stack.engine import DOCKER, Engine
from tests.cleanup import lab_down_after
from tests.helpers import free_ports, isolated_env, run_lab, start_lab
from tests.e2e.investigating import applies_not

pytestmark = pytest.mark.timeout(900)  # a fresh engine data root loads or builds images first

EXAMPLE = ROOT / "examples" / "compose-app"
SPEC = EXAMPLE / "lab.toml"
MODEL_SPEC = EXAMPLE / "lab-model.toml"  # the same file; replies from a model (Ollama's API)
FILES = [EXAMPLE / "compose.yaml", EXAMPLE / "app" / "Dockerfile", EXAMPLE / "app" / "server.js"]
DOCKER_ROOT = ROOT / ".lab" / "docker-tests"


def digest() -> str:
    return hashlib.sha256(b"".join(f.read_bytes() for f in FILES)).hexdigest()


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Docker engine that outlives every run of the module (a user's system engine)."""
    if os.environ.get("DOCKER_HOST"):
        yield os.environ["DOCKER_HOST"]
        return
    eng = Engine(tmp_path_factory.mktemp("engine"), DOCKER_ROOT)
    try:
        yield eng.ensure()
    finally:
        eng.stop()


def docker(host: str, *args: str) -> str:
    res = subprocess.run([DOCKER, *args], env={**os.environ, "DOCKER_HOST": host}, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return res.stdout


def engine_state(host: str) -> dict[str, list[str]]:
    """What `docker ps -a`, `docker network ls` and `docker volume ls` show."""
    return {
        "containers": docker(host, "ps", "-a", "--format", "{{.Names}}").split(),
        "networks": docker(host, "network", "ls", "--format", "{{.Name}}").split(),
        "volumes": docker(host, "volume", "ls", "--format", "{{.Name}}").split(),
    }


def env_for(tmp_path: Path, host: str) -> dict[str, str]:
    return isolated_env(tmp_path / "run", DOCKER_HOST=host, LAB_DOCKER_ROOT=str(DOCKER_ROOT))


def takeover_spec(tmp_path: Path) -> Path:
    """The example's spec routing by the host name the backend dials instead of its REDIS_URL."""
    text = SPEC.read_text().replace('compose = "compose.yaml"', f'compose = "{EXAMPLE / "compose.yaml"}"')
    path = tmp_path / "takeover.toml"
    path.write_text(text.replace('redis_env = "REDIS_URL"', 'redis_host = "redis"'))
    return path


def investigate(
    tmp_path: Path, host: str, spec: Path, *args: str, **extra_env: str
) -> tuple[subprocess.CompletedProcess[str], dict]:  # type: ignore[type-arg]
    env = env_for(tmp_path, host) | extra_env
    port = free_ports(1)[0]
    reports = tmp_path / "reports"
    before, hashed = engine_state(host), digest()
    # `lab down` afterwards: a run that timed out was SIGKILLed and left the app's project up.
    with lab_down_after(env):
        p = run_lab(
            env,
            "investigate",
            "--target",
            str(spec),
            "--set",
            f"http.port={port}",
            "--reports",
            str(reports),
            *args,
            timeout=900,
        )
        assert engine_state(host) == before, p.stdout + p.stderr  # nothing the lab made is left
        assert digest() == hashed  # the app's files byte-identical
    found = sorted(reports.glob("*/results.json"))
    return p, json.loads(found[-1].read_text()) if found else {}


def test_the_correct_app_shows_no_anomaly(tmp_path: Path, engine: str) -> None:
    p, results = investigate(tmp_path, engine, SPEC, "--trials", "1")
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert "as compose project chaoslab-app-" in out and "REDIS_URL=redis://chaoslab-toxiproxy:6379/0" in out
    assert results["verdict"] == "no anomaly found" and results["diagnoses"] == [], out
    # Every experiment judged, but one the app's design leaves nothing to test (write_refused
    # at=later where a turn is stored in one transaction: not applicable, said so).
    assert all(c["status"] == "valid" or applies_not(c) for c in results["cells"]), results["cells"]


@pytest.mark.parametrize("route", ["redis_env", "redis_host"])
def test_the_bug_switch_is_diagnosed(tmp_path: Path, engine: str, route: str) -> None:
    """APP_BUGS=swallow_errors, the down experiment: the writes really failed through the lab's
    Toxiproxy (the route works) and the app answered 200 anyway."""
    spec = SPEC if route == "redis_env" else takeover_spec(tmp_path)
    p, results = investigate(
        tmp_path, engine, spec, "--trials", "3", "--only", "down", "--set", "start.env.APP_BUGS=swallow_errors"
    )
    out = p.stdout + p.stderr
    assert p.returncode == 1, out
    assert [d["code"] for d in results["diagnoses"]] == ["acked_while_unreachable"], out
    if route == "redis_host":
        assert "redis:6379 taken over by Toxiproxy on default; redis moved to chaoslab-store" in out
    log = next(iter(sorted((tmp_path / "reports").glob("*/target.log")))).read_text()
    assert "bugs: swallow_errors" in log and "storing a user row failed" in log  # the app's own log, kept


def test_the_stand_in_model_serves_the_project_and_its_fault_is_diagnosed(tmp_path: Path, engine: str) -> None:
    """[model] on a compose target: the stand-in runs in the app's project behind the lab's
    Toxiproxy, the backend's OLLAMA_HOST names it, the model's errors reach the app through it,
    and APP_BUGS=store_after_model (the user's row stored only with the reply) loses the message
    of each failed call: lost_after_model_error, nothing else; then nothing of it is left."""
    p, results = investigate(
        tmp_path, engine, MODEL_SPEC, "--trials", "3", "--only", "model_error",
        "--set", "start.env.APP_BUGS=store_after_model",
    )  # fmt: skip
    out = p.stdout + p.stderr
    assert p.returncode == 1, out
    assert [d["code"] for d in results["diagnoses"]] == ["lost_after_model_error"], out
    assert "stand-in model (ollama_chat)" in out, out
    assert results["model"]["calls"] >= 3, results["model"]  # the app's calls reached the stand-in
    log = next(iter(sorted((tmp_path / "reports").glob("*/target.log")))).read_text()
    assert "replies: ollama http://chaoslab-toxiproxy:" in log and "ollama: HTTP 429" in log, log[-2000:]


# A user's own test of the compose app's API, through the browser (its fetches are what the lab
# records): a conversation created, three messages, the history read back.
USER_TEST = """
from playwright.sync_api import Page

CREATE = "async () => (await (await fetch('/api/conversations', {method: 'POST'})).json()).id"
SEND = \"\"\"async ([id, text]) => (await fetch(`/api/conversations/${id}/messages`, {method: 'POST',
    headers: {'Content-Type': 'application/json'}, body: JSON.stringify({content: text})})).status\"\"\"
READ = "async (id) => (await (await fetch(`/api/conversations/${id}/messages`)).json()).messages"

def start(page: Page) -> str:
    page.goto("/healthz")
    conversation = page.evaluate(CREATE)
    for text in ("first, from a user test", "second, from a user test"):
        assert page.evaluate(SEND, [conversation, text]) == 200
    return conversation

def test_the_conversation_is_kept(page: Page) -> None:
    conversation = start(page)
    assert page.evaluate(SEND, [conversation, "third, from a user test"]) == 200
    assert len(page.evaluate(READ, conversation)) == 6

def test_the_last_message_while_redis_is_down(page: Page, inject) -> None:
    conversation = start(page)
    inject("down")  # removed after the test, before the lab reads what was kept
    page.evaluate(SEND, [conversation, "third, while Redis is down"])  # the user's test does not judge this
"""


def test_pytest_lab_target_routes_a_compose_target_as_lab_investigate_does(tmp_path: Path, engine: str) -> None:
    """`pytest --lab-target` on the compose app's spec: the app's own project comes up with the
    lab's Toxiproxy in its override, the user's test chats through the browser, and the lab's
    judgement matches lab investigate's -- swallow_errors with Redis down for the last send (the
    test's own `inject`: the sends while it is in force are under the fault) answers 200 while
    nothing is stored (acked_while_unreachable, nothing else); without the fault, no anomaly.
    Nothing left on the engine."""
    (tmp_path / "user").mkdir()
    (tmp_path / "user" / "test_compose_chat.py").write_text(USER_TEST)
    env = env_for(tmp_path, engine)
    before, hashed = engine_state(engine), digest()
    cmd = [sys.executable, "-m", "pytest", str(tmp_path / "user"), "--lab-target", str(SPEC), "-q"]
    cmd += ["--lab-set", f"http.port={free_ports(1)[0]}", "--lab-set", "start.env.APP_BUGS=swallow_errors"]
    cmd += ["--lab-trials", "2", "-p", "no:cacheprovider", "-p", "no:xdist", "--output", str(tmp_path / "out")]
    with lab_down_after(env):
        p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
        out = p.stdout + p.stderr
        assert engine_state(engine) == before, out  # the project removed at the session's end
        assert digest() == hashed
    assert "chaoslab: the lab's judgement" in out, out
    assert "[acked_while_unreachable]" in out and "under down: 2 judged trials of 2" in out, out
    assert re.findall(r"^\s+\[(\w+)\] ", out, re.M) == ["acked_while_unreachable"], out  # and nothing else
    assert "under none: 2 judged trials of 2" in out and "no anomaly found in 2 judged trials" in out, out


def start_run(tmp_path: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], list[str]]:
    """`lab investigate` on the example, in a session of its own, once its trials run."""
    proc = start_lab(
        "investigate", "--target", str(SPEC), "--set", f"http.port={free_ports(1)[0]}", "--trials", "4",
        "--reports", str(tmp_path / "reports"),
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    lines: list[str] = []
    assert proc.stdout is not None
    try:
        wait_until(
            lambda: bool(lines.append(proc.stdout.readline()) or "contract ok" in lines[-1] or proc.poll() is not None),  # type: ignore[union-attr]
            what="the app's stack up and the first trials running",
            timeout_s=600,
        )
        assert proc.poll() is None, "".join(lines)
    except BaseException:
        proc.kill()  # not left running beside the caller's `lab down`
        proc.communicate()
        raise
    return proc, lines


@pytest.mark.parametrize(
    ("sig", "to"), [(signal.SIGTERM, "pid"), (signal.SIGINT, "group")], ids=["SIGTERM-pid", "SIGINT-group"]
)
def test_a_signal_mid_run_leaves_nothing(tmp_path: Path, engine: str, sig: signal.Signals, to: str) -> None:
    """SIGTERM to the lab's pid (kill, a supervisor) or SIGINT to its process group (Ctrl-C),
    once the app's stack is up and trials run: the project is removed all the same."""
    env = env_for(tmp_path, engine)
    before, hashed = engine_state(engine), digest()
    with lab_down_after(env):  # also when the signal step fails and `lab` is SIGKILLed below
        proc, lines = start_run(tmp_path, env)
        try:
            os.kill(proc.pid, sig) if to == "pid" else os.killpg(proc.pid, sig)
            rest, _ = proc.communicate(timeout=180)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        out = "".join(lines) + rest
        assert proc.returncode == 128 + sig, out
        assert "Traceback" not in out and "never retrieved" not in out, out
        assert engine_state(engine) == before, out
        assert digest() == hashed
        assert not [p for p in (tmp_path / "run-investigate").glob("*.pid")], out  # the log follower too


def test_lab_down_removes_what_a_killed_run_left(tmp_path: Path, engine: str) -> None:
    """SIGKILL leaves no chance to clean up: the project runs on, and `lab down` removes it."""
    env = env_for(tmp_path, engine)
    before = engine_state(engine)
    with lab_down_after(env):  # the test's own `lab down` may not be reached
        proc, _ = start_run(tmp_path, env)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
        assert engine_state(engine)["containers"] != before["containers"]  # left running
        down = run_lab(env, "down")
        assert down.returncode == 0 and "containers, networks and volumes removed" in down.stdout, (
            down.stdout + down.stderr
        )
        assert engine_state(engine) == before
        assert not list((tmp_path / "run-investigate").glob("*.pid"))


COMPOSE_V2 = LabConfig.from_env().bin_dir / "docker-compose-v2"


@pytest.mark.skipif(
    not COMPOSE_V2.exists(), reason=f"no {COMPOSE_V2}: make setup builds Compose v2 with go install (needs Go)"
)
def test_compose_v2_gives_the_same_diagnosis(tmp_path: Path, engine: str) -> None:
    """Compose v2 (`docker compose`, what most machines have) resolves and merges files its own
    way (long-syntax ports, explicit default networks): the takeover route, the diagnosis and
    the clean-up are the same as with docker-compose 1.29."""
    p, results = investigate(
        tmp_path, engine, takeover_spec(tmp_path), "--trials", "3", "--only", "down",
        "--set", "start.env.APP_BUGS=swallow_errors", LAB_COMPOSE=str(COMPOSE_V2),
    )  # fmt: skip
    out = p.stdout + p.stderr
    assert p.returncode == 1 and [d["code"] for d in results.get("diagnoses", [])] == ["acked_while_unreachable"], out
    assert "taken over by Toxiproxy on default" in out


def no_persistence_copy(tmp_path: Path) -> Path:
    """The example with Redis's persistence off, as some teams run it (the app's build context
    is the example's own folder)."""
    text = (EXAMPLE / "compose.yaml").read_text().replace("build: ./app", f"build: {EXAMPLE / 'app'}")
    text = text.replace("redis-server --appendonly yes", "redis-server --appendonly no --save ''")
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "compose.yaml").write_text(text)
    spec = SPEC.read_text().replace('compose = "compose.yaml"', f'compose = "{tmp_path / "app" / "compose.yaml"}"')
    (tmp_path / "lab.toml").write_text(spec)
    return tmp_path / "lab.toml"


PYTHON_EXAMPLE = ROOT / "examples" / "compose-python"


def python_copy(tmp_path: Path, password: str) -> Path:
    """examples/compose-python as its team has it, with its own password in its .env: Flask on
    gunicorn built FROM python:3.12-slim with pip, a Redis with `requirepass`, the app on db 2."""
    shutil.copytree(PYTHON_EXAMPLE, tmp_path / "app", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "app" / ".env").write_text(f"REDIS_PASSWORD={password}\n")
    return tmp_path / "app" / "lab.toml"


def test_a_python_image_and_a_redis_with_a_password_and_a_db_number(tmp_path: Path, engine: str) -> None:
    """The app's image is built FROM python:* with `pip install` (on an engine with no registry:
    the stand-in, its build on the host's network), its Redis needs a password and it uses db 2:
    the lab's readiness check, its direct reads of the key, the store's record and its faults log
    in as the app's REDIS_URL says, in that db (issue 40: the run stopped at "the app's redis at
    the lab's port: not ready after 30 s"). Correct: no anomaly; the password is in no file the
    lab wrote and not in its terminal. Its bug (a save handed to a thread pool whose failures
    nobody reads): acknowledged while Redis was unreachable in each of 5 trials, and nothing else
    but the write after the answer that the same bug leaves."""
    password = "pw-" + hashlib.sha256(str(tmp_path).encode()).hexdigest()[:16]
    had_python = "python:3.12-slim" in docker(engine, "images", "--format", "{{.Repository}}:{{.Tag}}").split()
    spec = python_copy(tmp_path, password)
    p, results = investigate(tmp_path, engine, spec, "--trials", "1", "--only", "none|down")
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert had_python or "stand-ins for python:3.12-slim" in out, out  # said, whichever run tagged it
    assert results["verdict"] == "no anomaly found" and all(c["status"] == "valid" for c in results["cells"]), out
    trials = json.loads(next((tmp_path / "reports").glob("*/trials.json")).read_text())
    assert trials and all(t["redis_final"] and t["redis_final"]["values"] > 0 for t in trials), trials  # db 2 read
    # The store's record: MONITOR logged in with the app's password, the app's writes of db 2 in it
    # (the down trial's one-shot outage is not a Redis restart: no gap).
    assert all(t["store_note"] is None and any(c["write"] for c in t["store"]) for t in trials), trials
    assert password not in out
    written = [f for f in (tmp_path / "run").rglob("*") if f.is_file()] + [
        f for f in (tmp_path / "reports").rglob("*") if f.is_file()
    ]
    assert written and not [f for f in written if password.encode() in f.read_bytes()], "the password was written"

    shutil.rmtree(tmp_path / "reports")
    p, results = investigate(
        tmp_path, engine, spec, "--trials", "5", "--only", "down", "--set", "start.env.CHAT_BUGS=background_save"
    )
    found = {d["code"]: d for d in results.get("diagnoses", [])}
    out = p.stdout + p.stderr
    assert p.returncode == 1 and results, f"exit {p.returncode}\n{out}"
    assert "acked_while_unreachable" in found and set(found) <= {"acked_while_unreachable", "stored_after_answer"}, out
    judged = sum(c["trials"] for c in results["cells"])  # a cell's trials are its judged ones (unknown apart)
    assert judged >= 2 and found["acked_while_unreachable"]["k"] == judged, results["cells"]


@pytest.mark.parametrize("persistence", ["aof", "none"])
def test_redis_restart_tests_the_apps_own_persistence(tmp_path: Path, engine: str, persistence: str) -> None:
    """The app's Redis killed and started as its file configures it: AOF on a named volume keeps
    the conversation; no persistence loses it."""
    spec = SPEC if persistence == "aof" else no_persistence_copy(tmp_path)
    p, results = investigate(tmp_path, engine, spec, "--trials", "2", "--only", "redis_restart")
    out = p.stdout + p.stderr
    cell = results["cells"][0]
    assert cell["trials"] == 2 and not cell.get("unknown"), out
    if persistence == "aof":
        assert p.returncode == 0 and cell["status"] == "valid" and results["diagnoses"] == [], out
    else:
        assert p.returncode == 1 and [d["code"] for d in results["diagnoses"]] == ["lost_on_redis_restart"], out


def test_a_backend_that_exits_at_start_is_named_and_nothing_is_left(tmp_path: Path, engine: str) -> None:
    """A bad bug switch makes the backend exit 2 at start-up: exit 2 (bad input) with the
    container's last lines, and the project removed."""
    p, _ = investigate(tmp_path, engine, SPEC, "--set", "start.env.APP_BUGS=no_such_bug")
    out = p.stdout + p.stderr
    assert p.returncode == 2, out
    assert "exited during start-up" in out and "APP_BUGS: unknown" in out, out
    assert "Traceback" not in out


def test_a_port_the_apps_file_publishes_in_use_is_named(tmp_path: Path, engine: str) -> None:
    """The example publishes 127.0.0.1:3000 (an override cannot take that away): held, the run
    stops before anything starts, naming the port and the service."""
    import socket

    with socket.socket() as held:
        held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        held.bind(("127.0.0.1", 3000))
        held.listen()
        p, results = investigate(tmp_path, engine, SPEC)
    out = p.stdout + p.stderr
    assert p.returncode == 2 and results == {}, out
    assert "port 3000 is in use" in out and "the service 'app' publishes it" in out, out


def test_lab_init_drafts_a_compose_target(tmp_path: Path, engine: str) -> None:
    """`lab init --compose`: the app started from its file, unedited, probed; the draft's [start]
    names the file and the service. The example has no OpenAPI; a create call makes its
    conversations and their ids travel in paths -- found by the create call's collection
    (POST /api/conversations): the draft is whole and passes the contract check (before that
    probe: exit 3, the routes named as missing)."""
    env = env_for(tmp_path, engine)
    out = tmp_path / "drafted.toml"
    before, hashed = engine_state(engine), digest()
    with lab_down_after(env):  # `lab init` started the app's project: a timed-out one is left up
        p = run_lab(
            env, "init", "--compose", str(EXAMPLE / "compose.yaml"), "--service", "app", "--container-port", "3000",
            "--port", str(free_ports(1)[0]), "--out", str(out), "--no-ask", timeout=900,
        )  # fmt: skip
        text = p.stdout + p.stderr
        assert p.returncode == 0, text
        assert "lab init: starting the service 'app' of" in text and "passes the contract check" in text, text
        import tomllib

        drafted = tomllib.loads(out.read_text())
        assert drafted["session"]["from"] == "create" and "COULD NOT INFER" not in out.read_text(), text
        start = drafted["start"]
        assert (Path(out.parent, start["compose"]).resolve(), start["service"], start["redis_env"], start["port"]) == (
            EXAMPLE / "compose.yaml",
            "app",
            "REDIS_URL",
            3000,
        )
        assert engine_state(engine) == before and digest() == hashed
