"""Which Chromium the lab drives: the headless shell by default, the full browser by choice, and
a named error for anything else."""

from __future__ import annotations

import pytest

from lab.driver import browser
from lab.common.errors import UsageError


def test_default_is_the_headless_shell_and_chromium_by_choice() -> None:
    assert browser.choice({}) == "headless-shell"
    assert browser.executable({"LAB_BROWSER": "chromium"}) == "/usr/bin/chromium"


def test_an_unknown_browser_names_the_valid_ones() -> None:
    with pytest.raises(UsageError) as err:
        browser.executable({"LAB_BROWSER": "firefox"})
    assert "'firefox'" in str(err.value) and "headless-shell, chromium" in err.value.hint
