"""The native topology is real: Redis behind Toxiproxy, the backend given only the proxy."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
import redis
import requests

from lab.stack.native import NativeStack
from lab.stack.toxiproxy import Toxiproxy


def _via_proxy(stack: NativeStack) -> "redis.Redis[bytes]":
    # A fresh client (fresh connection) each time: reset_peer only RSTs new connections.
    return redis.Redis.from_url(stack.cfg.redis_proxy_url, socket_timeout=5, retry=None)


def test_ping_through_the_redis_proxy(lab_stack: NativeStack, toxi: Toxiproxy) -> None:
    with _via_proxy(lab_stack) as r:
        assert r.ping() is True
    assert toxi.version() == "2.12.0"


def test_latency_toxic_delays_a_round_trip_by_at_least_its_latency(lab_stack: NativeStack, toxi: Toxiproxy) -> None:
    latency_ms = 300
    with _via_proxy(lab_stack) as r:
        r.ping()  # connect first: measure one command's round trip, not the handshake
        toxi.add_toxic("redis", "lat", "latency", "downstream", {"latency": latency_ms})
        t0 = time.monotonic()
        r.ping()
        elapsed_ms = (time.monotonic() - t0) * 1000
    assert elapsed_ms >= latency_ms, f"round trip {elapsed_ms:.0f} ms under a {latency_ms} ms toxic"


def test_downstream_reset_peer_makes_the_next_command_fail(lab_stack: NativeStack, toxi: Toxiproxy) -> None:
    toxi.add_toxic("redis", "rst", "reset_peer", "downstream", {"timeout": 0})
    with _via_proxy(lab_stack) as r, pytest.raises(redis.exceptions.ConnectionError):
        r.ping()
    toxi.remove_toxic("redis", "rst")
    with _via_proxy(lab_stack) as r:
        assert r.ping() is True


def test_backend_reaches_redis_only_through_toxiproxy(
    lab_stack: NativeStack, toxi: Toxiproxy, redis_direct: "redis.Redis[bytes]"
) -> None:
    """With the redis proxy disabled (Redis itself still up), POST /chat answers 503 JSON."""
    assert redis_direct.ping()
    toxi.set_enabled("redis", False)
    resp = requests.post(lab_stack.cfg.chat_url + "/chat", json={"message": "hello"}, timeout=30)
    assert resp.status_code == 503
    assert resp.json()["error"] == "store_unavailable"
    toxi.set_enabled("redis", True)
    resp = requests.post(lab_stack.cfg.chat_url + "/chat", json={"message": "hello"}, timeout=30)
    assert resp.status_code == 200


def test_backend_environment_names_only_the_proxy(lab_stack: NativeStack) -> None:
    pid = lab_stack.status()["services"]["backend"]["pid"]  # type: ignore[index]
    env = dict(kv.split("=", 1) for kv in Path(f"/proc/{pid}/environ").read_bytes().decode().split("\0") if "=" in kv)
    assert env["CHAT_REDIS_URL"] == lab_stack.cfg.redis_proxy_url
    assert str(lab_stack.cfg.ports["redis"]) not in env["CHAT_REDIS_URL"]
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    assert "services.chat" in cmdline


def test_status_reports_every_service(lab_stack: NativeStack) -> None:
    st = lab_stack.status()
    assert st["up"] and st["healthy"]
    assert json.loads(json.dumps(st))["endpoints"]["chat"] == lab_stack.cfg.chat_url


def test_a_chat_turn_is_stored_in_redis(lab_stack: NativeStack, redis_direct: "redis.Redis[bytes]") -> None:
    s = requests.Session()
    mid = uuid.uuid4().hex
    resp = s.post(lab_stack.cfg.chat_url + "/chat", json={"message": "my name is Dana", "id": mid}, timeout=30)
    assert resp.status_code == 200
    sid = s.cookies["session_id"]
    rows = [json.loads(x) for x in redis_direct.lrange(f"chat:{sid}", 0, -1)]
    assert [(r["id"], r["role"]) for r in rows] == [(mid, "user"), (mid, "assistant")]
