"""The app page's in-page cut (app_frames.cut_hook), run in Node against a stand-in WebSocket:
armed, the first frame of the chunk kind closes its socket -- an ack does not, an unarmed page
never does; Socket.IO's event packets (with a namespace or an ack id) are read as the lab reads
them."""

from __future__ import annotations

import asyncio
import json
import shutil
import time
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from lab.investigate.spec import parse as sp
from lab.investigate.browser.app_frames import FrameLog, _follow, cut_hook
from lab.investigate.browser.app_page import NOT_SENT
from lab.investigate.evidence.answers import Answer

ROOT = Path(__file__).resolve().parents[5]


@pytest.fixture
def page_spec(monkeypatch: pytest.MonkeyPatch) -> sp.Spec:
    """examples/fastapi-page.toml: a WebSocket page, ack then "delta" chunks (its login's
    variables set: the spec refuses to load without them)."""
    monkeypatch.setenv("CHAT_USER", "ada")
    monkeypatch.setenv("CHAT_PASSWORD", "not-a-secret")
    return sp.load(ROOT / "examples" / "fastapi-page.toml")


HARNESS = """
const closed = [];
class FakeSocket {
  constructor(url) { this.url = url; this.listeners = []; }
  addEventListener(type, fn) { if (type === "message") this.listeners.push(fn); }
  close() { closed.push(this.url); }
  receive(data) { for (const fn of this.listeners) fn({data}); }
}
globalThis.window = {WebSocket: FakeSocket};
%s
const [armed, frames] = %s;
window.__labCutArmed = armed;
const ws = new window.WebSocket("ws://app/1");
const at = [];
frames.forEach((f, i) => { ws.receive(f); if (closed.length && at.length === 0) at.push(i); });
console.log(JSON.stringify({closed: closed.length, at: at[0] ?? null, armed: window.__labCutArmed}));
"""


def _run(spec: sp.Spec, armed: bool, frames: list[str]) -> dict:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (make setup installs it): the hook is JavaScript")
    js = HARNESS % (cut_hook(spec), json.dumps([armed, frames]))
    out = subprocess.run([node, "-e", js], capture_output=True, text=True, timeout=30, check=True).stdout
    return json.loads(out)


def test_armed_the_first_chunk_closes_the_socket_and_the_ack_does_not(page_spec: sp.Spec) -> None:
    frames = ['{"type": "ack"}', '{"type": "delta", "text": "Ec"}', '{"type": "delta", "text": "ho"}']
    assert _run(page_spec, True, frames) == {"closed": 1, "at": 1, "armed": False}


def test_unarmed_nothing_is_closed(page_spec: sp.Spec) -> None:
    assert _run(page_spec, False, ['{"type": "delta", "text": "Ec"}'])["closed"] == 0


def test_socketio_event_packets_with_a_namespace_or_an_ack_id(page_spec: sp.Spec) -> None:
    assert page_spec.transport is not None
    sio = replace(page_spec, transport=replace(page_spec.transport, kind="socketio", chunk="chunk"))
    frames = ["40", '42["ack",{}]', '42/chat,17["chunk",{"text":"a"}]']
    assert _run(sio, True, frames) == {"closed": 1, "at": 2, "armed": False}
    assert _run(sio, True, ['42["reply_end",{}]', "3"])["closed"] == 0


def test_a_message_frame_the_page_never_sent_is_said_as_the_pages(page_spec: sp.Spec) -> None:
    """No frame holding the message: the page sent nothing (the lab's step, NOT_SENT); a message
    frame sent and never answered is the app's silence."""
    log = FrameLog()

    def answer() -> Answer:  # as app_frames.send starts one
        return {"status": None, "type": "frames", "body": "", "ms": 0.0, "error": None, "cut": None,
                "start": None, "end": None, "reply": None, "frames": 0}  # fmt: skip

    out = answer()
    asyncio.run(_follow(log, 0, page_spec, "hello", False, out, time.monotonic()))
    assert out["status"] is None and (out["error"] or "").startswith(NOT_SENT), out
    log._add("sent", '{"text": "hello"}', 1)
    out = answer()
    asyncio.run(_follow(log, 0, page_spec, "hello", False, out, time.monotonic()))
    assert out["status"] is None and (out["error"] or "").startswith("no "), out
