import requests

from lab.faults import Targets, make
from lab.stack import Stack


def test_backend_restart_changes_nothing_a_conversation_depends_on(targets: Targets, lab_stack: Stack) -> None:
    s = requests.Session()
    s.post(lab_stack.cfg.chat_url + "/chat", json={"message": "my name is Ivy"}, timeout=30)
    old = lab_stack.instance("backend")
    with make("backend_restart").on(targets) as evidence:
        assert "restarted" in evidence
    assert lab_stack.instance("backend") != old
    resp = s.post(lab_stack.cfg.chat_url + "/chat", json={"message": "what is my name?"}, timeout=30)
    assert resp.json()["reply"] == "Your name is Ivy."
