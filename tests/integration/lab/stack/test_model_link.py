"""The stand-in model beside the session stack, behind its own Toxiproxy proxy: an app's calls
go through it (a latency toxic on "model" slows them), the record is read past it, and nothing
is left after the link closes -- no proxy, no process, the ports free."""

from __future__ import annotations

import json
import time
import urllib.request

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
        got = model.calls(["chaoslab probe link-1 turn 1 aa", "chaoslab probe link-1 turn 2 bb"])
        assert [c["messages"][-1]["text"][-2:] for c in got] == ["aa", "bb"]
        pid = model.proc.pid if model.proc else 0
    assert PROXY not in Targets.of(lab_stack).toxiproxy.proxies()
    assert procs.state(pid) in (None, "Z") and procs.read(lab_stack.run_dir, "model") is None
    assert ports.is_free(cfg.host, cfg.ports["model"]) and ports.is_free(cfg.host, cfg.ports["model_proxy"])
