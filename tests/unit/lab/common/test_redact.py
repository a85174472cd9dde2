"""Secrets out of the terminal and the files of a run: replaced wherever they occur (the longest
first), in file contents and names; values too short to be secrets are not registered."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.common import redact


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    redact.clear()
    yield
    redact.clear()


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
