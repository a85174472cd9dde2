"""lab.stack.toxiproxy: toxiproxy-python made bounded in time, with every server error a clear lab
error, against the real server (and one silent listener for the timeout)."""

from __future__ import annotations

import socket

import pytest

from lab.stack.native import NativeStack
from lab.stack.toxiproxy import Toxiproxy, ToxiproxyError


def test_missing_proxy_is_a_clear_error(lab_stack: NativeStack) -> None:
    t = Toxiproxy(lab_stack.cfg.toxiproxy_url)
    with pytest.raises(ToxiproxyError, match="no proxy 'nope'"):
        t.add_toxic("nope", "x", "latency", attributes={"latency": 1})
    with pytest.raises(ToxiproxyError, match="not found"):
        t.remove_toxic("redis", "no-such-toxic")


def test_a_server_that_never_answers_times_out() -> None:
    """A listening socket that never accepts stands in for a hung Toxiproxy handler (the
    real one hangs only under conditions this test cannot produce on demand)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        t = Toxiproxy(f"http://127.0.0.1:{s.getsockname()[1]}", timeout_s=0.5)
        with pytest.raises(ToxiproxyError, match="did not answer .* within 0.5 s"):
            t.proxies()


def test_nothing_listening_says_to_start_the_stack() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ToxiproxyError, match="is the stack up"):
        Toxiproxy(f"http://127.0.0.1:{port}").proxies()


def test_two_servers_from_one_process_do_not_mix(lab_stack: NativeStack) -> None:
    """toxiproxy-python keeps host/port as class attributes; the wrapper binds them per call."""
    good = Toxiproxy(lab_stack.cfg.toxiproxy_url)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        bad = Toxiproxy(f"http://127.0.0.1:{s.getsockname()[1]}")
    with pytest.raises(ToxiproxyError):
        bad.proxies()
    assert "redis" in good.proxies()
