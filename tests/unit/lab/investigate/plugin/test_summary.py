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


def test_a_spec_with_a_model_says_over_how_many_calls_it_judged_what_the_model_was_told() -> None:
    """A silent model_told_less is a claim over calls: the summary says how many it checked, and
    how many were told less (the same line as lab investigate's); without [model], no line."""
    from tests.unit.lab.diagnoses.test_model_told_less import _trial

    whole = [_trial(f"t.py::test_chat[{i}]", {}) for i in range(2)]
    out = lines([("t.py::test_chat", t, check_safe(t)) for t in whole], [], lambda n: n)
    assert [x for x in out if x.startswith("  model: ")] == [
        "  model: 8 model calls checked against the turns acknowledged before each; none was told "
        "less than the user had been acknowledged: 0/2 trials [0.00, 0.66]"
    ], out
    lagging = [_trial("t.py::test_chat[0]", {4: [1, 2]}), _trial("t.py::test_chat[1]", {3: [1]})]
    out = lines([("t.py::test_chat", t, check_safe(t)) for t in lagging], [], lambda n: n)
    assert (
        "  model: 8 model calls checked against the turns acknowledged before each; 2 told less than the user had been acknowledged, in 2/2 trials [0.34, 1.00]"
        in out
    ), out
    assert any(x.startswith("  [model_told_less]") for x in out), out
    bare = Trial("t.py::test_chat[0]")
    assert not [x for x in lines([(bare.trial_id, bare, check_safe(bare))], [], lambda n: n) if "model:" in x]
