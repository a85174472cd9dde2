"""The stand-in model beside the session stack, behind its own Toxiproxy proxy: an app's calls
go through it (a latency toxic on "model" slows them), the record is read past it, and nothing
is left after the link closes -- no proxy, no process, the ports free."""

from __future__ import annotations

import json
import time
import urllib.request

from lab.common.wait import wait_until
from lab.faults import Targets
from lab.faults.latency import Latency
from lab.stack import ports, procs
from lab.stack.model_link import PROXY, ModelLink
from lab.stack.native import NativeStack


def _chat(url: str, text: str) -> tuple[str, float]:
    body = {"model": "m", "messages": [{"role": "user", "content": text}]}
    req = urllib.request.Request(
        url + "/v1/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    t0 = time.monotonic()
    with urllib.request.urlopen(req, timeout=10) as r:
        reply = json.loads(r.read())["choices"][0]["message"]["content"]
    return reply, (time.monotonic() - t0) * 1000


def test_calls_go_through_the_model_proxy_and_the_link_leaves_nothing(lab_stack: NativeStack) -> None:
    cfg = lab_stack.cfg
    with ModelLink(cfg, lab_stack.run_dir) as model:
        assert model.url.endswith(str(cfg.ports["model_proxy"]))
        reply, _ = _chat(model.url, "chaoslab probe link-1 turn 1 aa")
        assert reply.startswith("Turn 1 as I see it")
        fault = Latency(latency_ms=300, proxy=PROXY)
        with fault.on(Targets.of(lab_stack)):
            _, slow_ms = _chat(model.url, "chaoslab probe link-1 turn 2 bb")
        assert slow_ms >= 300, f"a call through the model proxy under 300 ms of latency took {slow_ms:.0f} ms"
        _chat(model.url, "someone else's call")
        texts = ["chaoslab probe link-1 turn 1 aa", "chaoslab probe link-1 turn 2 bb"]
        wait_until(lambda: not model.still_streaming(texts), what="the calls recorded", timeout_s=5)
        got = model.calls(texts)
        assert [c["messages"][-1]["text"][-2:] for c in got] == ["aa", "bb"]
        pid = model.proc.pid if model.proc else 0
    assert PROXY not in Targets.of(lab_stack).toxiproxy.proxies()
    assert procs.state(pid) in (None, "Z") and procs.read(lab_stack.run_dir, "model") is None
    assert ports.is_free(cfg.host, cfg.ports["model"]) and ports.is_free(cfg.host, cfg.ports["model_proxy"])


def test_a_model_cut_stops_a_streamed_call_part_way_and_heals(lab_stack: NativeStack) -> None:
    from lab.faults import make

    with ModelLink(lab_stack.cfg, lab_stack.run_dir) as model:
        with make("model_cut", cut_after=4).on(Targets.of(lab_stack)) as evidence:
            assert "stopped after 5 events, without its final one" in evidence, evidence  # role head + 4 tokens
            cut = _stream(model.url, "chaoslab probe cut-1 turn 1 aa")
        whole = _stream(model.url, "chaoslab probe cut-1 turn 2 bb")
        texts = ["chaoslab probe cut-1 turn 1 aa", "chaoslab probe cut-1 turn 2 bb"]
        # The stand-in records a call once its handler returns, a moment after the client has
        # read the last byte: the record is read once no call of these texts is still open.
        wait_until(lambda: not model.still_streaming(texts), what="the calls recorded", timeout_s=5)
        got = model.calls(texts)
    assert (cut[1], whole[1]) == (False, True)
    assert [(c["outcome"], c["tokens_sent"]) for c in got][0] == ("cut", 4)
    assert got[1]["outcome"] == "whole" and got[0]["reply"] == "Turn 1 as I "


def _stream(url: str, text: str) -> tuple[bytes, bool]:
    import http.client

    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": text}]}
    req = urllib.request.Request(
        url + "/v1/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        try:
            return r.read(), True
        except http.client.IncompleteRead as exc:
            return exc.partial, False
