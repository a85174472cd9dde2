"""pytest --lab-target's terminal summary is redacted: a reason quotes the app, which may echo
a login's secret."""

from __future__ import annotations


import pytest

from lab.common import redact
from lab.investigate.plugin.summary import lines
from lab.model.checker import check_safe
from lab.model.history import Trial


pytestmark = pytest.mark.usefixtures("fresh_secrets")


def test_the_summary_lines_are_redacted() -> None:
    redact.add("pw-0123456789")
    t = Trial("test_chat.py::test_login", unknown="the app answered 'bad password pw-0123456789'")
    out = lines([("test_chat.py::test_login", t, check_safe(t))], ["--lab-target", "app.toml"], lambda n: n)
    assert out[:2] == [
        "test_chat.py::test_login under none: 0 judged trials of 1",
        "  unknown: the app answered 'bad password [redacted]'",
    ]
    assert not [line for line in out if "pw-0123456789" in line], out
