"""The pytest plugin page's five-line user test (docs/pytest-plugin.md) runs as written, through
the installed plugin."""

import re

import pytest

from lab.common.config import ROOT


def test_the_plugin_pages_fault_example_passes(pytester: pytest.Pytester) -> None:
    readme = (ROOT / "docs" / "pytest-plugin.md").read_text()
    code = re.search(r"```python\n(.*?def test_redis_link_is_slow.*?)```", readme, re.S)
    assert code, "the example is missing from docs/pytest-plugin.md"
    pytester.makepyfile(test_user=code.group(1))
    pytester.runpytest_subprocess().assert_outcomes(passed=1)
