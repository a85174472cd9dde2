"""The stand-in as its own process for a module's tests, and no plan left between tests."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator

import pytest

from lab.common.wait import wait_until
from tests.helpers import free_ports


def _health(port: int) -> dict[str, object] | None:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/_lab/health", timeout=2) as r:
        return json.loads(r.read()) if r.status == 200 else None


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    """`python -m lab.standin --port N`, as the lab starts it; stopped by SIGTERM (its default
    disposition: the process ends)."""
    p = free_ports(1)[0]
    proc = subprocess.Popen([sys.executable, "-m", "lab.standin", "--port", str(p)], stdout=subprocess.DEVNULL)
    try:
        health = wait_until(lambda: _health(p), what="the stand-in answering", timeout_s=20)
        assert health["protocols"] == ["anthropic_messages", "ollama_chat", "openai_chat", "openai_responses"]
        yield p
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == -signal.SIGTERM


@pytest.fixture(autouse=True)
def no_plans(port: int) -> None:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/_lab/plans", method="DELETE")
    with urllib.request.urlopen(req, timeout=5) as r:
        assert r.status == 200
