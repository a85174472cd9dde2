"""The one scope of every command that starts a target: the variables a spec's [auth] names are
its secrets; its report folders and the target's log in the link's run folder are scrubbed when
it ends, however it ends; a spec without a login has none."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.common import redact
from lab.investigate.target import redaction
from lab.investigate.spec import parse as sp

ROOT = Path(__file__).resolve().parents[5]
REST = ROOT / "examples" / "fastapi-rest.toml"
PASSWORD = "pw-0123456789"


@pytest.fixture(autouse=True)
def login(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("CHAT_USER", "ada")
    monkeypatch.setenv("CHAT_PASSWORD", PASSWORD)
    redact.clear()
    yield
    redact.clear()


def test_the_secrets_are_the_variables_of_the_login() -> None:
    assert redaction.secret_envs(sp.load(REST)) == ("CHAT_USER", "CHAT_PASSWORD")
    assert redaction.secret_envs(sp.load(ROOT / "examples" / "chat-service.toml")) == ()
    assert redaction.secret_envs(None) == ()


def test_the_reports_and_the_target_log_are_scrubbed_however_the_run_ends(tmp_path: Path) -> None:
    run_dir, reports = tmp_path / "run-investigate", tmp_path / "reports" / "20261201-init"
    run_dir.mkdir()
    (reports / "trials").mkdir(parents=True)
    login_line = f"login {{'username': 'ada', 'password': '{PASSWORD}'}} -> token tok-abcdef123\n"
    with pytest.raises(KeyboardInterrupt), redaction.kept_secret(sp.load(REST), run_dir, reports):
        redact.add("tok-abcdef123")  # the token the login returned (lab.investigate.browser.identity)
        (run_dir / redaction.TARGET_LOG).write_text(login_line)
        (reports / "target.log").write_text(login_line)
        (reports / "trials" / "t1.json").write_text(f'{{"sent": "{PASSWORD}"}}')
        raise KeyboardInterrupt
    clean = "login {'username': 'ada', 'password': '[redacted]'} -> token [redacted]\n"
    assert (run_dir / "target.log").read_text() == clean and (reports / "target.log").read_text() == clean
    assert (reports / "trials" / "t1.json").read_text() == '{"sent": "[redacted]"}'


def test_a_spec_without_a_login_registers_nothing(tmp_path: Path) -> None:
    with redaction.kept_secret(sp.load(ROOT / "examples" / "chat-service.toml"), tmp_path):
        pass
    assert redact.known() == frozenset()
