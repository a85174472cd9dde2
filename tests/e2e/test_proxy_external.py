"""An app that already runs with its own Redis, which the lab did not start: `lab proxy up`
puts Toxiproxy in front of that Redis and prints the address to give the app; `lab investigate`
with `[start] external = true` then targets the running app (the foreign example, started by
the test as its owner would) with Toxiproxy's faults. The correct app: no anomaly found; with
its ack_early bug: acked_too_fast. `lab proxy down` stops the proxy and leaves the app's Redis
as it was."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from lab.stack import procs
from tests.e2e.investigating import FOREIGN, ROOT, investigate_env
from tests.cleanup import lab_down_after
from tests.helpers import free_ports, run_lab


def _owners_redis(tmp_path: Path, password: str | None) -> Iterator[int]:
    """The app owner's Redis (a real redis-server the lab did not start), with a password or not."""
    (port,) = free_ports(1)
    locked = ["--requirepass", password] if password else []
    p = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", *locked],
        stdout=subprocess.DEVNULL,
        cwd=tmp_path,
    )
    try:
        from lab.common.wait import wait_until

        wait_until(
            lambda: redis.Redis(port=port, password=password, socket_timeout=1).ping(), what="the owner's redis-server"
        )
        yield port
    finally:
        p.terminate()
        p.wait(timeout=10)


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[int]:
    yield from _owners_redis(tmp_path, None)


PASSWORD = "owner-" + secrets.token_hex(8)
DB = 4  # the app's db in its own Redis: the lab must read the key there, not in db 0


@pytest.fixture
def locked_redis(tmp_path: Path) -> Iterator[int]:
    """The owner's Redis with `requirepass`; the app on db 4 (issue 40: an external target's
    Redis was read with no password, in db 0)."""
    yield from _owners_redis(tmp_path, PASSWORD)


MODEL_FLASK = ROOT / "examples" / "model-flask.toml"


def _app(redis_url: str, port: int, bugs: str = "") -> subprocess.Popen[bytes]:
    env = dict(os.environ, REDIS_URL=redis_url, PORT=str(port), FOREIGN_BUGS=bugs)
    return subprocess.Popen([sys.executable, "examples/foreign_app.py"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL)


def _user_test(env: dict[str, str], spec: Path, port: int, tmp_path: Path) -> str:
    """examples/pytest_user's test on a slow Redis, 3 times, against the spec's running app."""
    cmd = [sys.executable, "-m", "pytest", "examples/pytest_user", "--lab-target", str(spec), "-k", "slow_redis"]
    cmd += ["--lab-set", f"http.port={port}", "--lab-trials", "3", "-p", "no:cacheprovider", "-p", "no:xdist", "-q"]
    p = subprocess.run(
        [*cmd, "--output", str(tmp_path / "out")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert p.returncode == 0, p.stdout + p.stderr  # the user's own asserts: they passed
    return p.stdout + p.stderr


def test_a_running_app_behind_lab_proxy(tmp_path: Path, locked_redis: int) -> None:
    """The owner's Redis wants a password and the app uses db 4: the owner gives the app the
    proxy's address with both, and the lab the app's URL through [redis] url_env -- its reads of
    the key and its store's record log in there, and the password is in no file nor line."""
    own_redis = locked_redis
    env, port = investigate_env(tmp_path)
    with lab_down_after(env):  # also the proxy and a timed-out investigation's Redis and Toxiproxy
        up = run_lab(env, "proxy", "up", "--redis", f"127.0.0.1:{own_redis}", timeout=60)
        assert up.returncode == 0, up.stdout + up.stderr
        m = re.search(r"REDIS_URL=redis://(127\.0\.0\.1:\d+)/0", up.stdout)
        assert m, up.stdout
        app_url = f"redis://:{PASSWORD}@{m.group(1)}/{DB}"  # as the owner configures the app
        env["OWNER_REDIS_URL"] = f"redis://:{PASSWORD}@127.0.0.1:{own_redis}/{DB}"
        text = FOREIGN.read_text()
        text = text.replace(
            '[redis]\nkey = "conv:{session}"', '[redis]\nkey = "conv:{session}"\nurl_env = "OWNER_REDIS_URL"'
        )
        assert "url_env" in text
        spec = tmp_path / "running.toml"
        spec.write_text(text[: text.index("[start]")] + "[start]\nexternal = true\n\n" + text[text.index("[http]") :])
        spec.write_text(
            spec.read_text().replace(
                'paths = ["examples/foreign_app.py"]', f'paths = ["{ROOT}/examples/foreign_app.py"]'
            )
        )
        args = [
            "investigate",
            "--target",
            str(spec),
            "--set",
            f"http.port={port}",
            "--reports",
            str(tmp_path / "reports"),
        ]
        try:
            for bugs, only, expect in (
                ("", "none|latency", "No anomaly found"),
                ("ack_early", "after_ack", "[acked_too_fast]"),  # its rows: the answer before the write
            ):
                app = _app(app_url, port, bugs)
                try:
                    res = run_lab(env, *args, "--trials", "2", "--only", only, timeout=600)
                finally:
                    app.terminate()
                    app.wait(timeout=10)
                out = res.stdout + res.stderr
                assert res.returncode == (0 if not bugs else 1), out
                assert expect in out and "the running app, its Redis" in out, out
                assert PASSWORD not in out, out
            # The key was read from the owner's Redis itself, in the app's db: the conversations are there.
            assert redis.Redis(port=own_redis, password=PASSWORD, db=DB).keys("conv:*"), "no conversation in db 4"
            # Judged trials (one the machine left unknown may have ended before its final read).
            trials = [t for p in (tmp_path / "reports").glob("*/trials.json") for t in json.loads(p.read_text())]
            judged = [t for t in trials if not t["unknown"]]
            assert judged and all(t["redis_final"] and t["redis_final"]["values"] > 0 for t in judged), trials
            assert all(t["store_note"] is None and any(c["write"] for c in t["store"]) for t in judged), trials
            # pytest --lab-target routes the same spec the same way: a user's test, the lab's judgement.
            app = _app(app_url, port, "ack_early")
            try:
                out = _user_test(env, spec, port, tmp_path)
            finally:
                app.terminate()
                app.wait(timeout=10)
            assert "[acked_too_fast]" in out and "-- 3/3 [" in out and PASSWORD not in out, out
        finally:
            down = run_lab(env, "proxy", "down", timeout=60)
        assert down.returncode == 0 and "stopped" in down.stdout, down.stdout + down.stderr
        assert run_lab(env, "proxy", "status", timeout=60).returncode == 3
        assert not [p for p in procs.recorded(tmp_path / "run-proxy") if p.alive()]
        assert redis.Redis(port=own_redis, password=PASSWORD).ping()  # the app's Redis is left as it was
        written = [f for f in tmp_path.rglob("*") if f.is_file() and f.name != "running.toml"]
        assert written and not [f for f in written if PASSWORD.encode() in f.read_bytes()], "the password was written"


def test_a_running_app_that_calls_a_model_is_given_the_stand_in_by_its_owner(tmp_path: Path, own_redis: int) -> None:
    """[model] with [start] external: `lab proxy up` prints the model address too; the owner
    starts the app (examples/model_flask.py on gunicorn, the openai SDK) with its SDK pointed
    there; while the run lasts the stand-in answers behind the proxy's Toxiproxy and its faults
    act: MODEL_APP_BUGS=store_after_model loses the message of a failed call."""
    env, port = investigate_env(tmp_path)
    with lab_down_after(env):
        up = run_lab(env, "proxy", "up", "--redis", f"127.0.0.1:{own_redis}", timeout=60)
        assert up.returncode == 0, up.stdout + up.stderr
        redis_url = re.search(r"REDIS_URL=(redis://127\.0\.0\.1:\d+/0)", up.stdout)
        model_url = re.search(r"OPENAI_BASE_URL=(http://127\.0\.0\.1:\d+/v1)", up.stdout)
        assert redis_url and model_url, up.stdout
        text = MODEL_FLASK.read_text()
        spec = tmp_path / "running-model.toml"
        text = text[: text.index("[start]")] + "[start]\nexternal = true\n\n" + text[text.index("[http]") :]
        spec.write_text(text.replace('"examples/model_flask.py"', f'"{ROOT}/examples/model_flask.py"'))
        owner = dict(
            os.environ, REDIS_URL=redis_url.group(1), OPENAI_BASE_URL=model_url.group(1), OPENAI_API_KEY="owner-key",
            MODEL_APP_BUGS="store_after_model",
        )  # fmt: skip
        argv = [sys.executable, "-m", "gunicorn", "-b", f"127.0.0.1:{port}", "--chdir", "examples", "model_flask:app"]
        app = subprocess.Popen(argv, cwd=ROOT, env=owner, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            res = run_lab(
                env, "investigate", "--target", str(spec), "--set", f"http.port={port}",
                "--reports", str(tmp_path / "reports"), "--trials", "2", "--only", "model_error", timeout=600,
            )  # fmt: skip
        finally:
            app.terminate()
            app.wait(timeout=10)
            run_lab(env, "proxy", "down", timeout=60)
        out = res.stdout + res.stderr
        assert res.returncode == 1, out
        assert f"started with OPENAI_BASE_URL={model_url.group(1)}" in out, out
        assert "[lost_after_model_error]" in out, out
        assert not [p for p in procs.recorded(tmp_path / "run-proxy") if p.alive()]  # the stand-in too


def test_lab_proxy_refuses_an_address_with_no_redis(tmp_path: Path) -> None:
    env, _ = investigate_env(tmp_path)
    (dead,) = free_ports(1)
    with lab_down_after(env):  # a proxy up that wrongly succeeded is stopped
        res = run_lab(env, "proxy", "up", "--redis", f"127.0.0.1:{dead}", timeout=60)
        assert res.returncode == 2 and f"--redis 127.0.0.1:{dead}: no Redis answers there" in res.stderr, res.stderr
        bad = run_lab(env, "proxy", "up", "--redis", "nonsense", timeout=60)
        assert bad.returncode == 2 and "is not HOST:PORT" in bad.stderr, bad.stderr
