"""Secrets out of the terminal and the files of a run: replaced wherever they occur (the longest
first), in file contents and names; values too short to be secrets are not registered."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from lab.common import redact


pytestmark = pytest.mark.usefixtures("fresh_secrets")


def test_text_replaces_every_secret_longest_first() -> None:
    redact.add("hunter22", "hunter22-and-more", "abc")  # "abc": too short to be a secret
    assert redact.known() == {"hunter22", "hunter22-and-more"}
    assert redact.text("pw hunter22-and-more, again hunter22; abc") == "pw [redacted], again [redacted]; abc"


def test_writer_redacts_what_goes_through() -> None:
    redact.add("s3cret-value")
    out = io.StringIO()
    w = redact.Writer(out)
    w.write("token=s3cret-value\n")
    assert out.getvalue() == "token=[redacted]\n"


def test_scrub_rewrites_contents_and_renames_files(tmp_path: Path) -> None:
    redact.add("s3cret-value")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "log.txt").write_bytes(b"login s3cret-value ok\n")
    (tmp_path / "trace-s3cret-value.zip").write_bytes(b"x")
    (tmp_path / "clean.json").write_text("{}")
    assert redact.scrub([tmp_path]) == 2
    assert (tmp_path / "a" / "log.txt").read_bytes() == b"login [redacted] ok\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "clean.json", "trace-[redacted].zip"]


def test_scope_takes_the_values_of_the_variables_and_scrubs_on_the_way_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHAT_PASSWORD", "pw-0123456789")
    log = tmp_path / "target.log"
    with pytest.raises(KeyboardInterrupt), redact.scope(["CHAT_PASSWORD"], [log, tmp_path / "missing"]):
        log.write_text("body {'password': 'pw-0123456789'}\n")
        raise KeyboardInterrupt  # Ctrl-C mid-run: the files are scrubbed all the same
    assert log.read_text() == "body {'password': '[redacted]'}\n"
    assert "pw-0123456789" in redact.known()  # the CLI's last line is redacted too


def test_scope_scrubs_a_secret_added_while_it_lasts_and_redacts_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No variable named (lab init's probe finds its login as it goes): a value registered
    mid-run is redacted from the terminal at once and from the files at the end."""
    log = tmp_path / "target.log"
    with redact.scope([], [log]):
        redact.add("tok-abcdef123")
        print("got tok-abcdef123")
        log.write_text("login -> token tok-abcdef123\n")
    assert capsys.readouterr().out == "got [redacted]\n"
    assert log.read_text() == "login -> token [redacted]\n"


def test_scope_without_the_terminal_leaves_sys_stdout_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pytest session's scope: pytest's capture swaps sys.stdout itself, and a stream restored
    from before would be a stale one; the files are scrubbed all the same."""
    import sys

    monkeypatch.setenv("CHAT_PASSWORD", "pw-0123456789")
    before = sys.stdout
    (tmp_path / "trial.json").write_text('{"password": "pw-0123456789"}')
    with redact.scope(["CHAT_PASSWORD"], [tmp_path], terminal=False):
        assert sys.stdout is before
    assert (tmp_path / "trial.json").read_text() == '{"password": "[redacted]"}'


def test_writer_wraps_a_stream_once() -> None:
    """A run inside another's scope (lab init's contract check) keeps one Writer."""
    out = io.StringIO()
    once = redact.writer(out)
    assert isinstance(once, redact.Writer) and redact.writer(once) is once
