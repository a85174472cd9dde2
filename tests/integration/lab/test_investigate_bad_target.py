"""`lab investigate` with targets that misbehave: a message saying what was expected, with the
last lines of the target's output, and nothing left running (target, Redis, Toxiproxy)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.common.config import PORT_ENV
from lab.stack import procs
from tests.cleanup import lab_down_after
from tests.helpers import free_ports, run_lab

SPEC = """
name = "bad"
[start]
command = ["{{python}}", "-c", {code!r}, "{marker}"]
ready_timeout_s = {timeout}
[http]
port = {port}
ready_path = "/healthz"
cookie = "sid"
[chat]
path = "/chat"
[history]
path = "/history"
"""


@pytest.fixture(autouse=True)
def _down_afterwards(tmp_path: Path) -> Iterator[None]:
    """`lab down` in the run folder _run uses, after the test's own checks (which must see what
    the lab itself left): a run that timed out was SIGKILLed with its Redis and Toxiproxy up."""
    with lab_down_after(dict(os.environ, LAB_RUN_DIR=str(tmp_path / "run"))):
        yield


def _run(tmp_path: Path, code: str, timeout: float = 3) -> tuple[int, str, str]:
    ports = free_ports(len(PORT_ENV) + 1)
    env = dict(os.environ)
    env.update({name: str(p) for name, p in zip(PORT_ENV.values(), ports)})
    env["LAB_RUN_DIR"] = str(tmp_path / "run")
    marker = f"chaoslab-test-{uuid.uuid4().hex}"
    spec = tmp_path / "bad.toml"
    spec.write_text(SPEC.format(code=code, marker=marker, timeout=timeout, port=ports[-1]))
    p = run_lab(env, "investigate", "--target", str(spec), "--reports", str(tmp_path / "reports"), timeout=120)
    return p.returncode, p.stdout + p.stderr, marker


def _running_with(marker: str) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    out.append(int(entry.name))
            except OSError:
                pass
    return out


def _assert_clean(tmp_path: Path, marker: str, out: str) -> None:
    assert _running_with(marker) == [], out
    run_dir = tmp_path / "run-investigate"
    assert [p for p in procs.recorded(run_dir) if p.alive()] == [], out


def test_target_that_never_gets_ready(tmp_path: Path) -> None:
    # Prints, then blocks forever without listening (the target's own behaviour under test: a
    # process that never gets ready); the lab's deadline must end it. The test itself waits on nothing.
    # It also keeps a temporary folder, as a cache or SQLite file would: the signal that stops it
    # leaves no clean-up of its own to run.
    code, out, marker = _run(
        tmp_path,
        "import tempfile, threading\nprint('booting step 1', flush=True)\n"
        "keep = tempfile.TemporaryDirectory(prefix='app-db-')\nprint('db at', keep.name, flush=True)\n"
        "print('waiting for a config that never comes', flush=True)\n"
        "threading.Event().wait()",
    )
    assert code == 2, out
    assert "not ready after 3 s" in out and "expected: GET /healthz answering 2xx" in out, out
    assert "waiting for a config that never comes" in out, out  # the last lines of its output
    _assert_clean(tmp_path, marker, out)
    db = Path(out.split("db at ", 1)[1].split()[0])
    assert db.parent.name.startswith("chaoslab-target-") and not db.parent.exists(), out


def test_target_that_exits_at_start(tmp_path: Path) -> None:
    code, out, marker = _run(
        tmp_path, "import sys\nprint('fatal: no REDIS_URL given', flush=True)\nsys.exit(3)", timeout=20
    )
    assert code == 2, out
    assert "exited during start-up" in out and "fatal: no REDIS_URL given" in out, out
    _assert_clean(tmp_path, marker, out)


def test_malformed_spec_names_field_value_and_form(tmp_path: Path) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text(
        '[start]\ncommand = "x"\n[http]\nport = 80\ncookie = "s"\n[chat]\npath = "/c"\n[history]\npath = "/h"\n'
    )
    p = run_lab(dict(os.environ), "investigate", "--target", str(spec), timeout=60)
    assert p.returncode == 2, p.stderr
    assert "http.port = 80 is not valid; expected the port the target listens on" in p.stderr
