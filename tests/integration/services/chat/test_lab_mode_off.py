"""A backend started outside lab mode (as it would run in production) refuses the lab's
profile headers with 403 and still serves plain requests."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator

import pytest
import requests

from lab.common.config import ROOT
from lab.stack.fingerprint import backend_command
from lab.stack.native import NativeStack
from lab.common.wait import wait_until


@pytest.fixture(scope="module")
def production_backend(lab_stack: NativeStack) -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "CHAT_REDIS_URL": lab_stack.cfg.redis_proxy_url, "CHAT_LAB_MODE": "0"}
    proc = subprocess.Popen(
        backend_command(f"127.0.0.1:{port}"), env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: requests.get(url + "/healthz", timeout=2).ok, what="backend without lab mode")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.parametrize("header", ["X-Lab-Defects", "X-Lab-Ttl-Ms", "X-Lab-Trial", "X-Lab-Model"])
def test_lab_headers_are_refused_outside_lab_mode(production_backend: str, header: str) -> None:
    resp = requests.post(production_backend + "/chat", json={"message": "hi"}, headers={header: "1"}, timeout=30)
    assert resp.status_code == 403
    assert resp.json()["error"] == "lab_mode_off" and header in resp.json()["message"]


def test_plain_requests_work_outside_lab_mode(production_backend: str) -> None:
    assert requests.get(production_backend + "/healthz", timeout=30).json() == {"status": "ok", "lab_mode": False}
    assert requests.post(production_backend + "/chat", json={"message": "hi"}, timeout=30).status_code == 200
